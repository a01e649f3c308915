// Package escape makes values that came from input safe to print. Event
// ids, business keys, consumer and check names, file names: any of them can
// hold a newline that starts a forged report line or a GitHub workflow
// command, an escape sequence that clears the terminal or retitles it, or
// a bidi override that reorders what a reader sees. Every text renderer
// and every message writes such values through Input.
//
// It imports no other package of this module.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Input returns s as is when every character is printable and it cannot be
// mistaken for an escaped value; otherwise it returns s as a Go-syntax
// double-quoted string, with control characters, invalid UTF-8 and
// invisible formatting characters (bidi overrides, zero-width joiners)
// written as escapes. A value that needs no escaping therefore never
// starts with a double quote or holds a backslash, and one that does is
// always quoted: the two cannot be confused.
func Input(s string) string {
	if Plain(s) {
		return s
	}
	return Quote(s)
}

// Line makes one line of text safe to print, where values from input may
// have been composed into a sentence: every character Input would escape,
// except the backslash and the double quote, is written as its escape, in
// place, without quoting the whole. Renderers pass every fragment that
// holds input through it, so no newline, carriage return, escape sequence
// or bidi override from input reaches the output.
func Line(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !printable(r) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	q := Quote(s)
	return strings.NewReplacer(`\`, `\`, `"`, `"`).Replace(q[1 : len(q)-1])
}

// QuoteSep separates the lines a message quotes from a program's output,
// such as a consumer's last stderr lines, which may hold anything: such a
// message is "sentence" + QuoteSep + "line" + QuoteSep + "line"….
const QuoteSep = "\n    "

// quoteMark starts each quoted line Message writes: indented, and behind a
// bar, so no quoted line can pass for a report line of redeliver's own or
// start a workflow command (GitHub Actions reads "::" after leading spaces).
const quoteMark = "    | "

// Message makes a message safe to print as lines: its sentence as Line
// writes it, then each line it quotes (see QuoteSep) on a line of its own,
// escaped as Line does and marked as a quote.
func Message(s string) string {
	sentence, quoted, ok := strings.Cut(s, QuoteSep)
	if !ok {
		return Line(s)
	}
	var b strings.Builder
	b.WriteString(Line(sentence))
	for _, l := range strings.Split(quoted, QuoteSep) {
		b.WriteByte('\n')
		b.WriteString(quoteMark)
		b.WriteString(Line(l))
	}
	return b.String()
}

// Quote returns s double-quoted with every character Input would not
// print as is escaped.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case printable(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	b.WriteByte('"')
	return b.String()
}

// Plain reports whether s prints as is.
func Plain(s string) bool {
	if strings.HasPrefix(s, `"`) {
		return false
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '\\' || !printable(r) {
			return false
		}
		i += n
	}
	return true
}

// printable is a graphic character or a plain space: no controls, no
// formatting characters (Cf: bidi overrides, zero-width spaces), no other
// spaces that hide what is there.
func printable(r rune) bool {
	if r == ' ' {
		return true
	}
	return unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r) && !unicode.IsSpace(r)
}
