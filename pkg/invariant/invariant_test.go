package invariant

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// guard is a strategy as the catalogue sees it.
type guard struct{ markers, key, out bool }

func (g guard) KeepsMarkers() bool { return g.markers }
func (g guard) UsesKey() bool      { return g.key }
func (g guard) CallsOut() bool     { return g.out }

var (
	eventID     = guard{markers: true}
	businessKey = guard{markers: true, key: true}
	externalKey = guard{markers: true, key: true, out: true}
	none        = guard{}
)

func TestEveryInvariantIsNamedDescribedAndWorded(t *testing.T) {
	seen := map[Name]bool{}
	for _, inv := range All {
		if inv.Name == "" || seen[inv.Name] {
			t.Errorf("invariant %q: empty or twice in the catalogue", inv.Name)
		}
		seen[inv.Name] = true
		if inv.Meaning == "" || inv.Number < 1 || inv.Number > 6 {
			t.Errorf("%s: meaning %q, number %d", inv.Name, inv.Meaning, inv.Number)
		}
		if len(inv.Kinds()) == 0 {
			t.Errorf("%s is checked by no kind of target", inv.Name)
		}
		if got := inv.Say(Facts{Event: "e1", Key: "k1", Table: "t", Rows: 2, IDs: []string{"1", "2"}}); got == "" {
			t.Errorf("%s says nothing", inv.Name)
		}
		if got, ok := Lookup(string(inv.Name)); !ok || got != inv {
			t.Errorf("Lookup(%q) = %v, %v", inv.Name, got, ok)
		}
	}
	if Known("double-effect") {
		t.Error(`Known("double-effect") = true, want false`)
	}
	if Order("double-effect") != len(All) || Order(DuplicateEffect.Name) != 0 {
		t.Errorf("Order: unknown %d, duplicate-effect %d", Order("double-effect"), Order(DuplicateEffect.Name))
	}
}

func TestChecked(t *testing.T) {
	names := func(is []*Invariant) string {
		var s []string
		for _, i := range is {
			s = append(s, string(i.Name))
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		kind Kind
		g    Guard
		want string
	}{
		{Handler, eventID, "duplicate-effect lost-effect missing-marker half-written wrong-effect changed-by-conflict"},
		{Handler, none, "duplicate-effect lost-effect half-written wrong-effect changed-by-conflict"},
		{Handler, externalKey, "duplicate-effect duplicate-key double-charge lost-effect missing-marker half-written wrong-effect changed-by-conflict unstable-key shared-key"},
		{Replay, eventID, "duplicate-effect lost-effect missing-marker"},
		{Replay, businessKey, "duplicate-effect duplicate-key lost-effect missing-marker"},
		{Replay, none, "duplicate-effect"},
		{Database, nil, "duplicate-effect changed-by-duplicate lost-effect never-acked changed-by-conflict"},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			if got := names(Checked(tt.kind, tt.g)); got != tt.want {
				t.Errorf("Checked(%s, %+v) = %q, want %q", tt.kind, tt.g, got, tt.want)
			}
		})
	}
}

// TestSay pins each wording: reports and goldens render from it.
func TestSay(t *testing.T) {
	tests := []struct {
		inv  *Invariant
		f    Facts
		want string
	}{
		{DuplicateEffect, Facts{Event: "e1", Consumer: "c", Table: "shipments", Rows: 2, IDs: []string{"1", "2"}}, "event e1 has 2 rows in shipments (ids 1, 2) for consumer c"},
		{DuplicateEffect, Facts{Key: "O-2", Table: "payments", Rows: 2}, "key O-2 has 2 rows in payments"},
		{DuplicateKey, Facts{Key: "o1", Table: "t", Rows: 2, IDs: []string{"1", "2"}, Events: []string{"e1", "e2"}}, "business key o1 has 2 rows in t (ids 1, 2, events e1, e2)"},
		{DoubleCharge, Facts{Key: "o1", Rows: 2, IDs: []string{"7", "8"}, By: "e2"}, "business key o1 was charged 2 times by the gateway (charges 7, 8), the second for event e2"},
		{LostEffect, Facts{Event: "e1", Outcome: "processed", Table: "t"}, "event e1 was processed but has no row in t"},
		{LostEffect, Facts{Event: "e1", Table: "t"}, "event e1 is marked processed but has no row in t"},
		{LostEffect, Facts{Key: "O-1", Table: "payments"}, "key O-1 was acked but has no row in payments"},
		{MissingMarker, Facts{Event: "e1", Outcome: "crashed"}, "event e1 was crashed but has no processed marker"},
		{MissingMarker, Facts{Event: "e1", Table: "t", IDs: []string{"3"}}, "event e1 has a row in t (id 3) but no processed marker"},
		{HalfWritten, Facts{Event: "e1", Outcomes: []string{"failed"}, Table: "t", Rows: 1, IDs: []string{"3"}, Marker: true}, "event e1 was never handled (failed), yet left 1 row in t (ids 3) and a processed marker"},
		{WrongEffect, Facts{Event: "e1", Returned: 2, Original: 1}, "a duplicate of event e1 returned effect 2, the original is 1"},
		{ChangedByConflict, Facts{Event: "e1"}, "the conflicting redelivery of event e1 changed what is stored"},
		{ChangedByConflict, Facts{Event: "e1", Key: "O-1", Table: "payments", Change: "amount 10 → 11"}, "the conflicting redelivery of event e1 changed the row of key O-1 in payments: amount 10 → 11"},
		{ChangedByDuplicate, Facts{Event: "e1", Key: "O-1", Table: "balances", Change: "balance 10 became 20"}, "the redelivery of event e1, whose effect was already committed, changed the rows of key O-1 in balances: balance 10 became 20"},
		{ChangedByDuplicate, Facts{Event: "e1", Key: "O-3", Table: "payments", Change: "amount 40 became 160", Deliveries: 4, AtOnce: true}, "the 4 deliveries of event e1 at once left the rows of key O-3 in payments other than one delivery leaves them: amount 40 became 160"},
		{NeverAcked, Facts{Event: "e1", Deliveries: 6, Outcomes: []string{"unacked (500)"}}, "event e1 was never acked in 6 deliveries (redelivered 5 times): unacked (500)"},
		{NeverAcked, Facts{Event: "e1", Deliveries: 2, Outcomes: []string{"unacked (connection reset)", "unacked (503)"}}, "event e1 was never acked in 2 deliveries (redelivered once): unacked (connection reset), unacked (503)"},
		{NeverAcked, Facts{Event: "e1", Deliveries: 1, Outcomes: []string{"rejected (400)"}}, "event e1 was never acked in 1 delivery: rejected (400)"},
		{NeverAcked, Facts{Event: "e\n1", Deliveries: 2, Outcomes: []string{"unacked (connection reset)", "unacked (\x1b[31m)"}}, `event "e\n1" was never acked in 2 deliveries (redelivered once): unacked (connection reset), "unacked (\x1b[31m)"`},
		{UnstableKey, Facts{Event: "e1", IdempotencyKeys: []string{"a", "b"}}, `event e1 sent 2 idempotency keys: "a", "b"`},
		{SharedKey, Facts{Event: "e2", Key: "o2", OtherKey: "o1", IdempotencyKeys: []string{"pay"}}, `idempotency key "pay" was sent for business key o1 and for o2 (event e2)`},
	}
	for _, tt := range tests {
		if got := tt.inv.Say(tt.f); got != tt.want {
			t.Errorf("%s.Say(%+v) =\n  %q\nwant\n  %q", tt.inv.Name, tt.f, got, tt.want)
		}
	}
	if got, want := Sentence(LostEffect.Name, "event e1 …", 3), "invariant lost-effect broken: event e1 …, by step 3"; got != want {
		t.Errorf("Sentence = %q, want %q", got, want)
	}
}

// TestDocumentsNameTheCatalogue: the JSON schemas users validate reports
// against, and the table of invariants in the scenario reference, list
// exactly the catalogue, in its order. A new invariant is added here, in
// this package; this test says which documents to bring along.
func TestDocumentsNameTheCatalogue(t *testing.T) {
	want := strings.Join(Names(), " ")
	for _, schema := range []string{"../../docs/report.schema.json", "../../docs/replay.schema.json"} {
		b, err := os.ReadFile(schema)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Defs struct {
				Invariant struct {
					Enum []string `json:"enum"`
				} `json:"invariant"`
			} `json:"$defs"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		if got := strings.Join(s.Defs.Invariant.Enum, " "); got != want {
			t.Errorf("%s: $defs.invariant.enum is %q, want %q", schema, got, want)
		}
	}
	b, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\| [1-6] \\| .* \\|$").FindAllStringSubmatch(string(b), -1) {
		table = append(table, m[1])
	}
	if got := strings.Join(table, " "); got != want {
		t.Errorf("docs/scenarios.md's table of invariants lists %q, want %q", got, want)
	}
}
