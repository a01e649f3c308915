package redact

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MinSecret is the length under which a value is not masked where it
// stands alone: a secret of one to three characters would mask pieces of
// ordinary words and numbers all over a report. Such a value is still
// masked wherever its form gives it away (String).
const MinSecret = 4

// Secrets are the secrets of a configuration known by their values — what
// a ${VAR} whose name says it is secret expanded to, the passwords of its
// URLs and DSNs, the values of its secret-named env entries — masked
// wherever they appear in a text, whatever printed them: a consumer that
// echoes its password on stderr is quoted in a report with it masked.
// The zero value holds none; a nil *Secrets masks by form only. It is
// safe for concurrent use.
type Secrets struct {
	mu     sync.Mutex
	values map[string]bool
	re     *regexp.Regexp
}

// Add adds secret values. A value shorter than MinSecret is ignored.
func (s *Secrets) Add(values ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		forms := []string{v}
		// A password written in a URL may be percent-encoded; the
		// consumer that reads it has the decoded one.
		if d, err := url.PathUnescape(v); err == nil && d != v {
			forms = append(forms, d)
		}
		for _, f := range forms {
			if len(f) < MinSecret || f == Mask || f == placeholder || s.values[f] {
				continue
			}
			if s.values == nil {
				s.values = map[string]bool{}
			}
			s.values[f] = true
			s.re = nil
		}
	}
}

// AddFound adds the secrets String recognises in text by their form (the
// password of a URL, a DSN's password=…), so that they are masked where
// they stand alone too.
func (s *Secrets) AddFound(text string) { s.Add(Found(text)...) }

// String returns text with every secret value masked, however the text
// escapes it, then every secret String recognises by its form.
func (s *Secrets) String(text string) string {
	if re := s.pattern(); re != nil {
		text = re.ReplaceAllLiteralString(text, Mask)
	}
	return String(text)
}

// Writer returns a writer that writes to w what each write is given with
// its secrets masked (String): for diagnostics written a message at a
// time.
func (s *Secrets) Writer(w io.Writer) io.Writer { return &writer{w: w, s: s} }

type writer struct {
	w io.Writer
	s *Secrets
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// pattern matches every secret value, each character as it is or in any
// of the escapes a report format writes it with.
func (s *Secrets) pattern() *regexp.Regexp {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.values) == 0 {
		return nil
	}
	if s.re == nil {
		// Longest first: where two secrets start at one place, the
		// whole of the longer one is masked.
		vs := make([]string, 0, len(s.values))
		for v := range s.values {
			vs = append(vs, v)
		}
		slices.SortFunc(vs, func(a, b string) int {
			if len(a) != len(b) {
				return len(b) - len(a)
			}
			return strings.Compare(a, b)
		})
		alts := make([]string, len(vs))
		for i, v := range vs {
			alts[i] = escaped(v)
		}
		s.re = regexp.MustCompile(strings.Join(alts, "|"))
	}
	return s.re
}

// escaped is a pattern matching v with each character that is not an
// ASCII letter or digit as it is or escaped as a report format may write
// it: an HTML or XML entity, \uXXXX or \xXX (JSON, a script, Go-quoted),
// %XX (a URL), a backslash before it, doubled (a quote in YAML or SQL),
// a space as + or folded onto the next line.
func escaped(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			continue
		}
		lit := regexp.QuoteMeta(string(r))
		alts := []string{lit, lit + lit, `\\?` + lit,
			fmt.Sprintf(`&#0*%d;`, r), fmt.Sprintf(`&#[xX]0*(?i:%x);`, r)}
		if r < 0x10000 {
			alts = append(alts, fmt.Sprintf(`\\?\\u(?i:%04x)`, r))
		}
		if r < 0x100 {
			alts = append(alts, fmt.Sprintf(`\\?\\x(?i:%02x)`, r))
		}
		var pct strings.Builder
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&pct, `%%(?i:%02x)`, c)
		}
		alts = append(alts, pct.String())
		switch r {
		case '<':
			alts = append(alts, `&lt;`)
		case '>':
			alts = append(alts, `&gt;`)
		case '&':
			alts = append(alts, `&amp;`)
		case '"':
			alts = append(alts, `&quot;`)
		case '\'':
			alts = append(alts, `&apos;`)
		case ' ':
			alts = append(alts, `\+`, `\s+`)
		case '\n':
			alts = append(alts, `\\n`, `\s+`)
		case '\t':
			alts = append(alts, `\\t`)
		case '\r':
			alts = append(alts, `\\r`)
		}
		b.WriteString("(?:" + strings.Join(alts, "|") + ")")
	}
	return b.String()
}
