package handler

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonicalNumber(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10E-1", "1"}, {"-0", "0"}, {"0.0", "0"},
		{"0.50", "0.5"}, {"-12.340", "-12.34"}, {"1e3", "1000"}, {"1.5e2", "150"},
		{"0.001", "0.001"}, {"1e-9", "1e-9"}, {"123e30", "1.23e32"},
		{"12345678901234567890123", "12345678901234567890123"}, {"1e40", "1e40"}, {"-1.5e-12", "-1.5e-12"},
		{"9007199254740993", "9007199254740993"},
		{"abc", "abc"}, {"1e", "1e"}, {"1e99999999999999999999", "1e99999999999999999999"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := CanonicalNumber(tt.in); got != tt.want {
				t.Errorf("CanonicalNumber(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"key order", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{"number spelling", `{"amount":1.50}`, `{"amount":15e-1}`},
		{"whitespace", "{ \"a\" : [ 1 , 2 ] }", `{"a":[1,2]}`},
		{"nested", `{"x":{"z":true,"y":null}}`, `{"x":{"y":null,"z":true}}`},
		{"escapes", `{"s":"\u00e9"}`, `{"s":"é"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := Canonical([]byte(tt.a))
			if err != nil {
				t.Fatal(err)
			}
			cb, err := Canonical([]byte(tt.b))
			if err != nil {
				t.Fatal(err)
			}
			if ca != cb {
				t.Errorf("Canonical(%s) = %s, Canonical(%s) = %s; want equal", tt.a, ca, tt.b, cb)
			}
		})
	}
	differ := [][2]string{{`{"a":1}`, `{"a":"1"}`}, {`[1,2]`, `[2,1]`}, {`{"a":1}`, `{"a":1,"b":null}`}}
	for _, d := range differ {
		ca, _ := Canonical([]byte(d[0]))
		cb, _ := Canonical([]byte(d[1]))
		if ca == cb {
			t.Errorf("Canonical(%s) == Canonical(%s) = %s; want different", d[0], d[1], ca)
		}
	}
	for _, bad := range []string{`{`, `{"a":1} x`, ``} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) succeeded, want an error", bad)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1.0,"x",null,true]`, `1e5`, `{"b":{"a":[]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := Canonical(raw)
		if err != nil {
			return
		}
		again, err := Canonical([]byte(c))
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", c, raw, err)
		}
		if again != c {
			t.Fatalf("canonical form is not stable: %q then %q", c, again)
		}
	})
}

// TestCanonicalPlainString checks the shortcut for plain strings against
// the full decoding: the same canonical form either way.
func TestCanonicalPlainString(t *testing.T) {
	tests := []struct{ in, want string }{
		{`"order-1"`, `"order-1"`},
		{`"a b ~"`, `"a b ~"`},
		{`"a<b"`, `"a\u003cb"`},
		{`"\u0041"`, `"A"`},
		{`"é"`, `"é"`},
		{`""`, `""`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Canonical([]byte(tt.in))
			if err != nil || got != tt.want {
				t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
			var b strings.Builder
			var s string
			if err := json.Unmarshal([]byte(tt.in), &s); err != nil {
				t.Fatal(err)
			}
			writeString(&b, s)
			if b.String() != got {
				t.Errorf("Canonical(%s) = %s, but the full path writes %s", tt.in, got, b.String())
			}
		})
	}
}

// TestCanonicalRefusesAmbiguousPayloads: a payload that readers would
// read differently has no canonical form.
func TestCanonicalRefusesAmbiguousPayloads(t *testing.T) {
	tests := []struct{ name, raw, want string }{
		{"key twice", `{"a":1,"a":2}`, `names the key "a" twice`},
		{"key twice, nested", `{"x":[{"b":1,"c":2,"b":1}]}`, `names the key "b" twice`},
		{"lone high surrogate", `"a\ud800"`, "lone UTF-16 surrogate"},
		{"lone low surrogate", `{"k":"\udc00x"}`, "lone UTF-16 surrogate"},
		{"high surrogate then a plain escape", `"\ud800\u0041"`, "lone UTF-16 surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical([]byte(tt.raw))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Canonical(%s) = %q, %v; want an error saying %q", tt.raw, got, err, tt.want)
			}
		})
	}
	for _, ok := range []string{`"\ud83d\ude00"`, `"\\ud800"`, `{"a":{"a":1}}`, `[{"a":1},{"a":2}]`} {
		if _, err := Canonical([]byte(ok)); err != nil {
			t.Errorf("Canonical(%s): %v", ok, err)
		}
	}
}
