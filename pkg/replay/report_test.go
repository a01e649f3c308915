package replay

import (
	"fmt"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// TestExamplesNameTheirLines: each example of a broken invariant carries
// the capture lines that delivered its event, and the report lists the
// invariants the strategy checked with how many times each broke.
func TestExamplesNameTheirLines(t *testing.T) {
	rep := run(t, Options{Inputs: []string{sample("cloudevents.ndjson")}, Handler: handler.Config{Strategy: handler.None}, Seed: 1, Redeliver: 0.3})
	// The capture gives business keys (its subjects), so one effect per key
	// is checked too, and broken.
	if len(rep.Violations) != 2 || rep.Violations[0].Invariant != "duplicate-effect" || rep.Violations[1].Invariant != "duplicate-key" {
		t.Fatalf("violations %+v, want duplicate-effect and duplicate-key", rep.Violations)
	}
	want := map[string]string{
		"/orders/evt-1": fmt.Sprint([]Place{{File: sample("cloudevents.ndjson"), Line: 1}}),
		"/orders/evt-2": fmt.Sprint([]Place{{File: sample("cloudevents.ndjson"), Line: 2}, {File: sample("cloudevents.ndjson"), Line: 3}, {File: sample("cloudevents.ndjson"), Line: 9}}),
	}
	for _, x := range rep.Violations[0].Examples {
		if w, ok := want[x.Event]; ok && fmt.Sprint(x.At) != w {
			t.Errorf("event %s at %v, want %s", x.Event, x.At, w)
		}
	}
	if got := fmt.Sprint(rep.Invariants); got != "[{duplicate-effect a consumer has more than one effect for one event id 2} {duplicate-key "+invariant.DuplicateKey.Meaning+" 3}]" {
		t.Errorf("invariants %s", got)
	}
}

// TestChecked: which invariants a replay checks follows the strategy.
func TestChecked(t *testing.T) {
	tests := []struct {
		s    handler.Strategy
		want string
	}{
		{handler.EventID, "[duplicate-effect lost-effect missing-marker]"},
		{handler.None, "[duplicate-effect]"},
		{handler.BusinessKey, "[duplicate-effect duplicate-key lost-effect missing-marker]"},
	}
	for _, tt := range tests {
		if got := fmt.Sprint(Checked(tt.s)); got != tt.want {
			t.Errorf("Checked(%s) = %s, want %s", tt.s, got, tt.want)
		}
	}
}

// TestUnfinished: a replay that stopped says what it was asked, with no
// invariant checked and verdict error.
func TestUnfinished(t *testing.T) {
	r := Unfinished(Options{Inputs: []string{"-", "a.ndjson"}, FailOn: []Finding{IdentityReuse}})
	if r.Verdict != "error" || len(r.Invariants) != 0 || r.Passed() {
		t.Errorf("verdict %q, invariants %v", r.Verdict, r.Invariants)
	}
	if got := fmt.Sprint(r.Inputs); got != "[{stdin auto} {a.ndjson auto}]" {
		t.Errorf("inputs %s", got)
	}
	if r.Strategy != handler.EventID || len(r.FailOn) != 1 {
		t.Errorf("strategy %s, fail-on %v", r.Strategy, r.FailOn)
	}
}
