package invariant

import (
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

func rec(event string, o consumer.Outcome, effect int64) Record {
	return Record{EventID: event, Consumer: "c", Result: consumer.Result{Outcome: o, EffectID: effect}, Step: 1}
}

func keyed(r Record, key string) Record { r.Key = key; return r }

func called(r Record, idemKey string, charge int64) Record {
	r.Result.External = &consumer.ExternalCall{IdempotencyKey: idemKey, ChargeID: charge}
	return r
}

func eff(id int64, event, key string) handler.Effect {
	return handler.Effect{ID: id, EventID: event, Consumer: "c", BusinessKey: key}
}

func mark(event string) handler.Marker { return handler.Marker{EventID: event, Consumer: "c"} }

type breakingCase struct {
	name     string
	strategy handler.Strategy
	history  []Record
	state    State
	want     []*Invariant
	detail   string
}

func breakingCases() []breakingCase {
	return []breakingCase{
		{
			name:     "safe run keeps every invariant",
			strategy: handler.EventID,
			history:  []Record{rec("e1", consumer.Processed, 1), rec("e1", consumer.Duplicate, 1), rec("e2", consumer.Failed, 0)},
			state:    State{Markers: []handler.Marker{mark("e1")}, Effects: []handler.Effect{eff(1, "e1", "")}},
		},
		{
			name:     "duplicate effect",
			strategy: handler.None,
			history:  []Record{rec("e1", consumer.Processed, 1), rec("e1", consumer.Processed, 2)},
			state:    State{Effects: []handler.Effect{eff(1, "e1", ""), eff(2, "e1", "")}},
			want:     []*Invariant{DuplicateEffect},
			detail:   "event e1 has 2 rows in shipments (ids 1, 2) for consumer c, by step 1",
		},
		{
			name:     "duplicate business key",
			strategy: handler.BusinessKey,
			history:  []Record{keyed(rec("e1", consumer.Processed, 1), "o1"), keyed(rec("e2", consumer.Processed, 2), "o1")},
			state:    State{Markers: []handler.Marker{mark("e1"), mark("e2")}, Effects: []handler.Effect{eff(1, "e1", "o1"), eff(2, "e2", "o1")}},
			want:     []*Invariant{DuplicateKey},
			detail:   "business key o1 has 2 rows in shipments (ids 1, 2, events e1, e2)",
		},
		{
			name:     "one order under two event ids, on a strategy that names the key",
			strategy: handler.EventID,
			history:  []Record{keyed(rec("e1", consumer.Processed, 1), "o1"), keyed(rec("e2", consumer.Processed, 2), "o1")},
			state:    State{Markers: []handler.Marker{mark("e1"), mark("e2")}, Effects: []handler.Effect{eff(1, "e1", "o1"), eff(2, "e2", "o1")}},
			want:     []*Invariant{DuplicateKey},
			detail:   "business key o1 has 2 rows in shipments (ids 1, 2, events e1, e2)",
		},
		{
			name:     "one effect per key and consumer, on a strategy scoped by consumer",
			strategy: handler.ConsumerScoped,
			history: []Record{keyed(rec("e1", consumer.Processed, 1), "o1"),
				{EventID: "e1", Consumer: "d", Key: "o1", Result: consumer.Result{Outcome: consumer.Processed, EffectID: 2}, Step: 1}},
			state: State{Markers: []handler.Marker{mark("e1"), {EventID: "e1", Consumer: "d"}},
				Effects: []handler.Effect{eff(1, "e1", "o1"), {ID: 2, EventID: "e1", Consumer: "d", BusinessKey: "o1"}}},
		},
		{
			name:     "double charge and unstable key",
			strategy: handler.ExternalKey,
			history: []Record{
				keyed(called(rec("e1", consumer.Failed, 0), "pay-o1-1", 1), "o1"),
				keyed(called(rec("e1", consumer.Processed, 1), "pay-o1-2", 2), "o1"),
			},
			state: State{Markers: []handler.Marker{mark("e1")}, Effects: []handler.Effect{eff(1, "e1", "o1")},
				Charges: []Charge{{ID: 1, IdempotencyKey: "pay-o1-1", OrderRef: "o1"}, {ID: 2, IdempotencyKey: "pay-o1-2", OrderRef: "o1"}}},
			want: []*Invariant{DoubleCharge, UnstableKey},
		},
		{
			name:     "shared key",
			strategy: handler.ExternalKey,
			history: []Record{
				keyed(called(rec("e1", consumer.Processed, 1), "pay", 1), "o1"),
				keyed(called(rec("e2", consumer.Processed, 2), "pay", 1), "o2"),
			},
			state: State{Markers: []handler.Marker{mark("e1"), mark("e2")}, Effects: []handler.Effect{eff(1, "e1", "o1"), eff(2, "e2", "o2")},
				Charges: []Charge{{ID: 1, IdempotencyKey: "pay", OrderRef: "o1"}}},
			want:   []*Invariant{SharedKey},
			detail: `idempotency key "pay" was sent for business key o1 and for o2 (event e2)`,
		},
		{
			name:     "lost effect",
			strategy: handler.EventID,
			history:  []Record{rec("e1", consumer.Processed, 1)},
			state:    State{Markers: []handler.Marker{mark("e1")}},
			want:     []*Invariant{LostEffect},
			detail:   "event e1 was processed but has no row in shipments",
		},
		{
			name:     "missing marker",
			strategy: handler.MarkerAfterEffect,
			history:  []Record{rec("e1", consumer.Processed, 1)},
			state:    State{Effects: []handler.Effect{eff(1, "e1", "")}},
			want:     []*Invariant{MissingMarker},
		},
		{
			name:     "missing marker is fine past the retention horizon",
			strategy: handler.EventID,
			history:  []Record{{EventID: "e1", Consumer: "c", Result: consumer.Result{Outcome: consumer.Processed, EffectID: 1}, At: time.Unix(0, 0)}},
			state:    State{Effects: []handler.Effect{eff(1, "e1", "")}, Horizon: time.Unix(10, 0)},
		},
		{
			name:     "half written",
			strategy: handler.MarkerAfterEffect,
			history:  []Record{rec("e1", consumer.Failed, 0)},
			state:    State{Effects: []handler.Effect{eff(1, "e1", "")}},
			want:     []*Invariant{HalfWritten},
			detail:   "event e1 was never handled (failed), yet left 1 row in shipments (ids 1)",
		},
		{
			name:     "wrong effect",
			strategy: handler.EventID,
			history:  []Record{rec("e1", consumer.Processed, 1), rec("e1", consumer.Duplicate, 7)},
			state:    State{Markers: []handler.Marker{mark("e1")}, Effects: []handler.Effect{eff(1, "e1", "")}},
			want:     []*Invariant{WrongEffect},
			detail:   "a duplicate of event e1 returned effect 7, the original is 1",
		},
		{
			name:     "changed by conflict",
			strategy: handler.EventID,
			history:  []Record{rec("e1", consumer.Processed, 1), {EventID: "e1", Consumer: "c", Result: consumer.Result{Outcome: consumer.Conflict}, ChangedStore: true}},
			state:    State{Markers: []handler.Marker{mark("e1")}, Effects: []handler.Effect{eff(1, "e1", "")}},
			want:     []*Invariant{ChangedByConflict},
		},
	}
}

// TestEveryInvariantCanFail builds, for each invariant, a history and state
// that break it, and one that keeps it: every check the tool ships can fail.
func TestEveryInvariantCanFail(t *testing.T) {
	tests := breakingCases()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.history {
				tt.history[i].Seq = i + 1
			}
			got := Check(tt.strategy, "shipments", tt.history, tt.state)
			var names []string
			for _, v := range got {
				names = append(names, string(v.Invariant))
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, string(w.Name))
			}
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Fatalf("violations = %v, want %v (%v)", names, want, got)
			}
			if tt.detail != "" && !strings.Contains(got[0].String(), tt.detail) {
				t.Errorf("violation says %q, want it to contain %q", got[0].String(), tt.detail)
			}
		})
	}
}

// TestEveryHandlerInvariantCanBreak: every invariant the catalogue says a
// run checks is broken by one of the histories above, so none of them is a
// check that cannot fail.
func TestEveryHandlerInvariantCanBreak(t *testing.T) {
	broken := map[Name]bool{}
	for _, c := range breakingCases() {
		for _, inv := range c.want {
			broken[inv.Name] = true
		}
	}
	for _, inv := range All {
		if inv.CheckedBy(Handler, nil) && !broken[inv.Name] {
			t.Errorf("no history breaks %s", inv.Name)
		}
	}
}
