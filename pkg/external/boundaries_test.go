package external

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// TestBoundariesOfAMultiStatementQuery: the statements of one simple
// query are each counted, and only the boundaries the proxy can hold —
// before the query's first, after its last — are tried.
func TestBoundariesOfAMultiStatementQuery(t *testing.T) {
	trace := []sqlproxy.Statement{
		{Index: 1, Lane: 1, LaneIndex: 1, Text: "SELECT 1", Answer: "SELECT 1"},
		{Index: 2, Lane: 1, LaneIndex: 2, Text: "BEGIN", Answer: "BEGIN", Part: 1, Parts: 3},
		{Index: 3, Lane: 1, LaneIndex: 3, Text: "INSERT INTO payments VALUES (1)", Answer: "INSERT 0 1", Part: 2, Parts: 3},
		{Index: 4, Lane: 1, LaneIndex: 4, Text: "COMMIT", Answer: "COMMIT", Part: 3, Parts: 3},
	}
	var kills []string
	for _, b := range killBoundaries(trace, false, false) {
		kills = append(kills, b.Name)
	}
	want := []string{
		"killed before statement 1 (SELECT 1)",
		"killed after statement 1 (SELECT 1)",
		"killed before statement 2 (BEGIN)",
		"killed after statement 4 (COMMIT)",
	}
	if strings.Join(kills, "|") != strings.Join(want, "|") {
		t.Errorf("kill boundaries\n%s\nwant\n%s", strings.Join(kills, "\n"), strings.Join(want, "\n"))
	}
	if n := len(raceBoundaries(trace, false)); n != 4 {
		t.Errorf("%d race boundaries, want 4", n)
	}
	lines := traceLines(trace)
	if !strings.Contains(lines[2], "INSERT INTO payments VALUES (1) → INSERT 0 1 (statement 2 of 3 of one query: only before its first and after its last can a boundary be held)") {
		t.Errorf("trace line %q", lines[2])
	}
}
