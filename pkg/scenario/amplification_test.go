package scenario

import (
	"fmt"
	"strings"
	"testing"
)

// TestAliasAmplificationAcrossSteps: one anchor of about 800 KiB of data,
// small enough for one event, referenced by 2,000 steps, is refused with
// the line where the file's data went over its bound, not expanded into
// gigabytes.
func TestAliasAmplificationAcrossSteps(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchecks:\n  - name: amplified\n    steps:\n")
	// The first step's data defines the anchors: 3 levels of 30 aliases
	// over a 28-byte string, 27,000 strings, about 850 KiB as JSON.
	b.WriteString("      - deliver:\n          id: e0\n          data:\n")
	b.WriteString("            l0: &l0 \"" + strings.Repeat("x", 28) + "\"\n")
	for lvl := 1; lvl <= 3; lvl++ {
		fmt.Fprintf(&b, "            l%d: &l%d [", lvl, lvl)
		for i := 0; i < 30; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", lvl-1)
		}
		b.WriteString("]\n")
	}
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&b, "      - deliver: {id: e%d, data: *l3}\n", i)
	}
	src := b.String()
	if len(src) > 128<<10 {
		t.Fatalf("the file is %d bytes; the attack is a small file", len(src))
	}
	_, err := Load("amp.yaml", []byte(src))
	if err == nil {
		t.Fatal("loaded; want refused")
	}
	es, ok := err.(Errors)
	if !ok || len(es) == 0 {
		t.Fatalf("got %T %v", err, err)
	}
	msg := es[0].Error()
	if !strings.Contains(msg, "expands to more than 8 MiB in all") || !strings.HasPrefix(msg, "amp.yaml:") {
		t.Fatalf("error %q; want the line where the data went over 8 MiB", msg)
	}
	if len(es) > 2 {
		t.Errorf("%d errors; the bound is said once", len(es))
	}
}

// TestAliasedChecksAreCounted: small steps aliased into checks aliased
// thousands of times are counted as the steps they expand to.
func TestAliasedChecksAreCounted(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nchecks:\n  - &c\n    name: one\n    steps: &s\n")
	for i := 0; i < 1000; i++ {
		b.WriteString("      - deliver: {id: a, data: {}}\n")
	}
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "  - {name: c%d, steps: *s}\n", i)
	}
	_, err := Load("many.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "the file has more than 20000 steps here, aliases expanded") {
		t.Fatalf("got %v", err)
	}
}
