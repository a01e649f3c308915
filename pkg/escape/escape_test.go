package escape

import (
	"strconv"
	"strings"
	"testing"
)

func TestInput(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain id", "evt-1", "evt-1"},
		{"unicode letters stay", "Bestellung-äöü-日本", "Bestellung-äöü-日本"},
		{"spaces stay", "rollback and retry", "rollback and retry"},
		{"empty", "", ""},
		{"newline forging a verdict", "x\nPASS: everything fine", `"x\nPASS: everything fine"`},
		{"workflow command", "x\n::error::owned", `"x\n::error::owned"`},
		{"carriage return", "a\rb", `"a\rb"`},
		{"terminal clear", "a\x1b[2Jb", `"a\x1b[2Jb"`},
		{"OSC title", "\x1b]0;pwned\x07", `"\x1b]0;pwned\a"`},
		{"bidi override", "a\u202eb", `"a\u202eb"`},
		{"zero width space", "a\u200bb", `"a\u200bb"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"NEL", "a\u0085b", `"a\u0085b"`},
		{"invalid UTF-8", "a\xffb", `"a\xffb"`},
		{"lone surrogate bytes", "a\xed\xa0\x80", `"a\xed\xa0\x80"`},
		{"backslash is quoted so escapes are unambiguous", `a\nb`, `"a\\nb"`},
		{"leading quote is quoted", `"x"`, `"\"x\""`},
		{"inner quote stays", `say "hi"`, `say "hi"`},
		{"tab", "a\tb", `"a\tb"`},
		{"NUL", "a\x00b", `"a\x00b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Input(tt.in)
			if got != tt.want {
				t.Fatalf("Input(%q) = %s, want %s", tt.in, got, tt.want)
			}
			if strings.ContainsAny(got, "\n\r\x1b\u202e") {
				t.Fatalf("Input(%q) = %q still holds a control character", tt.in, got)
			}
			// A quoted value reads back as the input (valid UTF-8 only:
			// invalid bytes are escaped the way Go writes them too).
			if got != tt.in {
				back, err := strconv.Unquote(got)
				if err != nil || back != tt.in {
					t.Fatalf("Unquote(%s) = %q, %v; want %q", got, back, err, tt.in)
				}
			}
		})
	}
}

func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"event evt-1 has 2 rows", "event evt-1 has 2 rows"},
		{"event x\nPASS: fine has 2 rows", `event x\nPASS: fine has 2 rows`},
		{"event x\n::error::y", `event x\n::error::y`},
		{"a\x1b[2Jb \u202e", `a\x1b[2Jb \u202e`},
		{`say "hi" \ back`, `say "hi" \ back`},
		{"bad \xff byte", `bad \xff byte`},
	}
	for _, tt := range tests {
		if got := Line(tt.in); got != tt.want {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMessage(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no quoted lines", "the consumer exited", "the consumer exited"},
		{"a newline of the sentence stays escaped", "missing\nPASS: fine: no such file", `missing\nPASS: fine: no such file`},
		{"quoted lines on lines of their own",
			"the consumer exited; its last stderr lines:" + QuoteSep + "starting" + QuoteSep + "giving up",
			"the consumer exited; its last stderr lines:\n    | starting\n    | giving up"},
		{"a quoted line cannot forge a verdict or a workflow command",
			"it exited:" + QuoteSep + "PASS: all fine" + QuoteSep + "::error::owned",
			"it exited:\n    | PASS: all fine\n    | ::error::owned"},
		{"control characters in a quoted line are escaped",
			"it exited:" + QuoteSep + "\x1b[2Jcleared\rback \u202e\xff",
			"it exited:\n    | \\x1b[2Jcleared\\rback \\u202e\\xff"},
		{"a lone newline in a quoted line is escaped",
			"it exited:" + QuoteSep + "a\nPASS: b",
			"it exited:\n    | a\\nPASS: b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Message(tt.in)
			if got != tt.want {
				t.Fatalf("Message(%q) =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
			for i, l := range strings.Split(got, "\n") {
				if i > 0 && !strings.HasPrefix(l, quoteMark) {
					t.Fatalf("line %d of Message(%q) is not marked as quoted: %q", i+1, tt.in, l)
				}
				if strings.ContainsAny(l, "\r\x1b\u202e") {
					t.Fatalf("Message(%q) holds a control character: %q", tt.in, l)
				}
			}
		})
	}
}

func FuzzInput(f *testing.F) {
	for _, s := range []string{"evt-1", "a\nb", "\x1b[2J", "a\u202eb", "\xff", `"`, `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Input(s)
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069') {
				t.Fatalf("Input(%q) = %q holds %U", s, got, r)
			}
		}
		if got != s {
			back, err := strconv.Unquote(got)
			if err != nil || back != s {
				t.Fatalf("Unquote(%s) = %q, %v; want %q", got, back, err, s)
			}
		}
	})
}
