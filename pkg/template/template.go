// Package template parses and expands the small placeholder templates that
// scenario files use: business keys ("{data.orderId}"), idempotency keys
// ("payment-{data.orderId}") and report lines ("{deliveries} calls").
//
// A placeholder is a name between braces; "{{" and "}}" stand for literal
// braces. Nothing else is special, so a template can never execute code.
//
// It imports no other package of this module.
package template

import (
	"fmt"
	"strings"
)

// Template is a parsed template: literal text and placeholders, in order.
type Template struct {
	src   string
	parts []part
}

type part struct {
	text  string
	field bool
}

// Parse reads s. It fails on an unclosed or empty placeholder.
func Parse(s string) (Template, error) {
	t := Template{src: s}
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			lit.WriteByte('{')
			i++
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			lit.WriteByte('}')
			i++
		case c == '{':
			end := strings.IndexByte(s[i+1:], '}')
			if end < 0 {
				return Template{}, fmt.Errorf("placeholder at byte %d is not closed with }", i+1)
			}
			name := strings.TrimSpace(s[i+1 : i+1+end])
			if name == "" {
				return Template{}, fmt.Errorf("placeholder at byte %d is empty", i+1)
			}
			if strings.ContainsAny(name, "{") {
				return Template{}, fmt.Errorf("placeholder at byte %d contains {", i+1)
			}
			if lit.Len() > 0 {
				t.parts = append(t.parts, part{text: lit.String()})
				lit.Reset()
			}
			t.parts = append(t.parts, part{text: name, field: true})
			i += end + 1
		case c == '}':
			return Template{}, fmt.Errorf("stray } at byte %d (write }} for a literal brace)", i+1)
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		t.parts = append(t.parts, part{text: lit.String()})
	}
	return t, nil
}

// MustParse is Parse for templates written in code; it panics on an error.
func MustParse(s string) Template {
	t, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template as written.
func (t Template) String() string { return t.src }

// IsZero reports whether the template is empty.
func (t Template) IsZero() bool { return len(t.parts) == 0 }

// Fields returns the placeholder names, in order of appearance.
func (t Template) Fields() []string {
	var out []string
	for _, p := range t.parts {
		if p.field {
			out = append(out, p.text)
		}
	}
	return out
}

// Part is a piece of a template: literal text, or a placeholder's name.
type Part struct {
	Text  string
	Field bool
}

// Parts returns the template's pieces, in order.
func (t Template) Parts() []Part {
	out := make([]Part, len(t.parts))
	for i, p := range t.parts {
		out[i] = Part{Text: p.text, Field: p.field}
	}
	return out
}

// Expand writes the template with every placeholder replaced by value(name).
func (t Template) Expand(value func(name string) string) string {
	if len(t.parts) == 1 && !t.parts[0].field {
		return t.parts[0].text
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.field {
			b.WriteString(value(p.text))
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}
