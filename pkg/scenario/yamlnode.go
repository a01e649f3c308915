package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/template"
	"go.yaml.in/yaml/v3"
)

// The YAML node walking every section loader shares: mappings with known
// fields, scalars of one type, and the words of an error about a node.

func (l *loader) errorf(n *yaml.Node, format string, args ...any) {
	l.errs = append(l.errs, errorf(pos(l.file, n), format, args...))
}

func (l *loader) pos(n *yaml.Node) Pos { return pos(l.file, n) }

// field is one allowed key of a mapping and what to do with its value.
type field struct {
	name string
	do   func(key, val *yaml.Node)
}

// mapping walks a mapping node: every key must be one of fields, once.
func (l *loader) mapping(n *yaml.Node, what string, fields []field) bool {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, not %s", what, describe(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var f *field
		for j := range fields {
			if k.Kind == yaml.ScalarNode && fields[j].name == k.Value {
				f = &fields[j]
			}
		}
		if f == nil {
			names := make([]string, len(fields))
			for j := range fields {
				names[j] = fields[j].name
			}
			l.errorf(k, "unknown field %q in %s; expected %s", k.Value, what, oneOf(names))
			continue
		}
		if seen[k.Value] {
			l.errorf(k, "field %q appears twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		f.do(k, resolve(v))
	}
	return true
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return resolve(n.Content[0])
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!int":
			return "the number " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

func oneOf(names []string) string {
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return "one of " + strings.Join(names, ", ")
}

// str reads a string scalar. Numbers are accepted where a string is
// expected (an id written as 42 is the id "42"), lists and mappings are not.
func (l *loader) str(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		l.errorf(n, "%s must be a string, not %s", what, describe(n))
		return "", false
	}
	return n.Value, true
}

func (l *loader) integer(n *yaml.Node, what string, min, max int) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		l.errorf(n, "%s must be a whole number, not %s", what, describe(n))
		return 0, false
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil || v < int64(min) || v > int64(max) {
		if max == math.MaxInt {
			l.errorf(n, "%s must be at least %d, not %s", what, min, n.Value)
		} else {
			l.errorf(n, "%s must be between %d and %d, not %s", what, min, max, n.Value)
		}
		return 0, false
	}
	return int(v), true
}

func (l *loader) tmpl(n *yaml.Node, what string) template.Template {
	s, ok := l.str(n, what)
	if !ok {
		return template.Template{}
	}
	t, err := template.Parse(s)
	if err != nil {
		l.errorf(n, "%s is not a valid template: %v", what, err)
	}
	return t
}

// ParseDuration reads a duration as Go writes it ("90s", "25h", "1h30m"),
// or a whole number of days ("7d").
func ParseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100000 {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return v, nil
}

func (l *loader) duration(n *yaml.Node, what string) (time.Duration, bool) {
	s, ok := l.str(n, what)
	if !ok {
		return 0, false
	}
	d, err := ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(n, "%s must be a positive duration such as 30s, 25h or 7d, not %q", what, s)
		return 0, false
	}
	return d, true
}

func words[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func braced(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "{" + x + "}"
	}
	return out
}

// mappingAny walks a mapping with free-form string keys.
func (l *loader) mappingAny(n *yaml.Node, what string, do func(k, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		l.errorf(n, "%s must be a mapping, not %s", what, describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if seen[k.Value] {
			l.errorf(k, "%q appears twice in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		do(k, v)
	}
}
