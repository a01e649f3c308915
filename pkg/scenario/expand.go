package scenario

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/redact"
	"go.yaml.in/yaml/v3"
)

var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ExpandEnv replaces ${VAR} and ${VAR:-default} with values from lookup.
// An unset VAR without a default is an error naming it.
func ExpandEnv(s string, lookup func(string) (string, bool)) (string, error) {
	var err error
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		inner := m[2 : len(m)-1]
		name, def, hasDef := strings.Cut(inner, ":-")
		if !envName.MatchString(name) {
			if err == nil {
				err = fmt.Errorf("${%s} is not a variable reference; write ${NAME} or ${NAME:-default}", inner)
			}
			return m
		}
		v, ok := lookup(name)
		if hasDef && (!ok || v == "") {
			return def
		}
		if !ok {
			if err == nil {
				err = fmt.Errorf("the environment variable %s is not set (write ${%s:-default} for a default)", name, name)
			}
			return m
		}
		return v
	})
	return out, err
}

// xstr reads a string and expands environment variables in it.
func (l *loader) xstr(n *yaml.Node, what string) (string, bool) {
	s, ok := l.str(n, what)
	if !ok {
		return "", false
	}
	v, err := ExpandEnv(s, func(name string) (string, bool) {
		if name == DBURLVar || name == JDBCURLVar {
			// Known only once the proxy listens: the consumer's start
			// fills it in.
			if l.dbURLNode == nil {
				l.dbURLNode = n
				l.dbURLVar = name
			}
			return "${" + name + "}", true
		}
		v, ok := os.LookupEnv(name)
		if l.externalVars[name] || !ok && externalRef.MatchString(name) {
			// An external's stand-in, known once it listens; or one
			// the file should declare (validateExternals says so). A
			// variable of that form the environment sets, and no
			// external declares, is the environment's.
			if l.externalRefs == nil {
				l.externalRefs = map[string]*yaml.Node{}
			}
			if l.externalRefs[name] == nil {
				l.externalRefs[name] = n
			}
			return "${" + name + "}", true
		}
		if ok && redact.SecretName(name) {
			l.secret(v)
		}
		return v, ok
	})
	if err != nil {
		l.errorf(n, "%s: %v", what, err)
		return "", false
	}
	l.secret(redact.Found(v)...)
	if p := Placeholder(v); p != "" {
		l.errorf(n, "%s is still the placeholder %s: replace it with your own value%s", what, p, placeholderVar(s))
		return "", false
	}
	return v, true
}

// placeholderRef is a placeholder redeliver init writes where only the
// user knows the value: "<fill in: what goes here>".
var placeholderRef = regexp.MustCompile(`<fill in:[^>]*>`)

// Placeholder returns the first "<fill in: …>" placeholder in s, or "".
func Placeholder(s string) string { return placeholderRef.FindString(s) }

// placeholderVar says which variable a placeholder is the default of,
// when it is one: ", or set NAME".
func placeholderVar(raw string) string {
	for _, m := range envRef.FindAllStringSubmatch(raw, -1) {
		if name, def, ok := strings.Cut(m[1], ":-"); ok && Placeholder(def) != "" && envName.MatchString(name) {
			return ", or set " + name
		}
	}
	return ""
}

func (l *loader) xstrs(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "%s must be a list of strings such as [bin/consumer, --listen, \"127.0.0.1:8080\"], not %s", what, describe(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		if s, ok := l.xstr(resolve(e), what+" entry"); ok {
			out = append(out, s)
		}
	}
	if len(n.Content) == 0 {
		l.errorf(n, "%s is empty; it needs at least the program to run", what)
	} else if len(out) > 0 && out[0] == "" {
		l.errorf(n, "%s names no program: its first entry is empty", what)
	}
	return out
}

// secret records values of the configuration that are secrets, for
// every output to mask.
func (l *loader) secret(values ...string) {
	for _, v := range values {
		if v != "" && l.s != nil {
			l.s.Secrets = append(l.s.Secrets, v)
		}
	}
}

// shown expands a command's entries as messages show them: a variable
// whose name holds a secret expands to xxxxx, whatever its value. (The
// mistakes in them are xstrs's to report.)
func shown(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		return nil
	}
	lookup := func(name string) (string, bool) {
		v, ok := os.LookupEnv(name)
		if ok && v != "" && redact.SecretName(name) {
			return redact.Mask, true
		}
		return v, ok
	}
	var out []string
	for _, e := range n.Content {
		v, _ := ExpandEnv(resolve(e).Value, lookup)
		out = append(out, v)
	}
	return out
}

func (l *loader) xmap(n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	l.mappingAny(n, what, func(k, v *yaml.Node) {
		if s, ok := l.xstr(v, what+" "+k.Value); ok {
			if redact.SecretName(k.Value) || strings.EqualFold(k.Value, "Authorization") {
				l.secret(s)
			}
			out[k.Value] = s
		}
	})
	return out
}

// dir reads the directory a consumer runs in, which must exist: a
// relative one resolves against the current directory.
func (l *loader) dir(n *yaml.Node, what string) string {
	d, ok := l.xstr(n, what)
	if !ok || d == "" {
		return d
	}
	st, err := os.Stat(d)
	switch {
	case err != nil && os.IsNotExist(err):
		l.errorf(n, "%s %q does not exist (a relative dir resolves against the current directory)", what, d)
	case err != nil:
		l.errorf(n, "%s %q cannot be used: %v", what, d, errors.Unwrap(err))
	case !st.IsDir():
		l.errorf(n, "%s %q is a file; expected the directory the consumer runs in", what, d)
	}
	return d
}

// timeout reads a positive duration such as 2s.
func (l *loader) timeout(n *yaml.Node, what string) time.Duration {
	s, ok := l.xstr(n, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		l.errorf(n, "%s must be a positive duration such as 500ms or 5s, not %q", what, s)
		return 0
	}
	return d
}

// delay reads a duration that may be zero, such as 0ms or 5ms.
func (l *loader) delay(n *yaml.Node, what string) time.Duration {
	s, ok := l.str(n, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Hour {
		l.errorf(n, "%s must be a duration from 0ms to 1h such as 5ms, not %q", what, s)
		return 0
	}
	return d
}
