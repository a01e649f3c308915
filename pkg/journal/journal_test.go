package journal

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// delivery is a delivery as the tests give it to the journal.
type delivery struct {
	invariant.Record
	kind                consumer.Outcome
	said                string
	acked               bool // by the consumer
	changed, duplicated string
}

func (d *delivery) Event() (string, bool) { return d.EventID, d.acked }

func (d *delivery) Answered() invariant.Answered {
	return invariant.Answered{Record: &d.Record, Answer: d.kind, ConsumerAcked: d.acked, Said: d.said,
		Changed: d.changed, Duplicated: d.duplicated}
}

// TestJournalJudgesAsHistory: the invariants a replay decides over its
// journal, which keeps per event and per key what the judge needs, are
// the ones judge decides over every delivery: the same breaches, in the
// same order, naming the same deliveries, on generated histories with
// every answer, redeliveries, events whose key has no row, several rows
// or changed ones, and ids given two keys. Each history is judged kept
// in memory, kept in the journal from its first delivery, and moved
// into the journal part way through its deliveries or its effect rows;
// the journal writing what it holds one delivery at a time, a few, or
// many.
func TestJournalJudgesAsHistory(t *testing.T) {
	ctx := context.Background()
	kinds := []consumer.Outcome{consumer.Acked, consumer.Acked, consumer.Acked, consumer.Conflict, consumer.Rejected, consumer.Unacked}
	reached := map[invariant.Name]int{}
	spilled := map[string]int{}
	for seed := uint64(1); seed <= 40; seed++ {
		for _, mode := range []string{"memory", "journal", "deliveries", "rows"} {
			rng := rand.New(rand.NewPCG(seed, 3))
			var hist []Delivery
			j, err := Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			events := 1 + rng.IntN(30)
			deliveries := 1 + rng.IntN(120)
			switch mode {
			case "memory":
				j.memDeliveries, j.memRows = 1<<30, 1<<30
			case "journal":
				j.memDeliveries, j.memRows = 0, 0
			case "deliveries":
				j.memDeliveries, j.memRows = deliveries/2, 1<<30
			case "rows":
				j.memDeliveries, j.memRows = 1<<30, 2
			}
			// The journal writes its deliveries a batch at a time, each
			// table's rows in statements of 64, 16, 4 and 1: one by one,
			// in batches of several sizes, and all at the end.
			j.batch = []int{1, 5, 70, 300}[seed%4]
			for i := 0; i < deliveries; i++ {
				e := rng.IntN(events)
				key := fmt.Sprintf("k%d", e%(1+events/2))
				if rng.IntN(20) == 0 {
					key = fmt.Sprintf("k%d", rng.IntN(events)) // one id, another key
				}
				kind, status := kinds[rng.IntN(len(kinds))], 200
				// An ack dropped on purpose: acked by the consumer, not
				// by the broker.
				dropped := rng.IntN(10) == 0
				res := consumer.Result{Outcome: kind}
				if kind == consumer.Unacked {
					status = 500 + rng.IntN(3)
				}
				d := &delivery{Record: invariant.Record{Seq: i + 1, EventID: fmt.Sprintf("evt-%d", e), Key: key, Result: res,
					Pos: consumer.Location{File: []string{"a.ndjson", "b.ndjson"}[rng.IntN(2)], Line: i + 1}},
					kind: kind, said: fmt.Sprintf("%s (%d)", kind, status), acked: kind == consumer.Acked || dropped && status == 200}
				if kind == consumer.Unacked {
					d.Result.Err = errors.New(d.said)
				}
				if rng.IntN(15) == 0 {
					d.changed = "amount 1 became 2"
				}
				if rng.IntN(15) == 0 {
					d.duplicated = "amount 2 became 3"
				}
				before := false
				for _, h := range hist {
					before = before || h.(*delivery).EventID == d.EventID
				}
				hist = append(hist, d)
				// add says whether the event had a delivery before (a
				// delivery counts as a redelivery then).
				if seen, err := j.Add(ctx, d); err != nil || seen != before {
					t.Fatalf("seed %d, %s, delivery %d of %s: add says seen %v (err %v), want %v", seed, mode, i+1, d.EventID, seen, err, before)
				}
				j.Changed(d)
			}
			var rows []invariant.Row
			for i := 0; i < rng.IntN(2*events); i++ {
				ev := ""
				if rng.IntN(4) > 0 {
					ev = fmt.Sprintf("evt-%d", rng.IntN(events))
				}
				rows = append(rows, invariant.Row{Key: fmt.Sprintf("k%d", rng.IntN(events)), Event: ev, Values: fmt.Sprintf(`["%d"]`, rng.IntN(5))})
			}
			// The table as Rows gives it to judge: sorted by values.
			sorted := append([]invariant.Row(nil), rows...)
			sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Values < sorted[b].Values })
			want := invariant.JudgeRows(answeredAll(hist), sorted, "payments")
			got, n, err := j.Judge(ctx, func(f func(invariant.Row) error) error {
				for _, r := range rows {
					if err := f(r); err != nil {
						return err
					}
				}
				return nil
			}, "payments")
			if j.spilled {
				spilled[mode]++
			}
			j.Close()
			if err != nil {
				t.Fatal(err)
			}
			if n != len(rows) {
				t.Errorf("seed %d, %s: %d effect rows, want %d", seed, mode, n, len(rows))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d, %s: the journal judges\n%s\nthe history judges\n%s", seed, mode, show(got), show(want))
			}
			for _, v := range want {
				reached[v.Invariant]++
			}
		}
	}
	for mode, want := range map[string]int{"memory": 0, "journal": 40} {
		if spilled[mode] != want {
			t.Errorf("%s: %d of 40 histories moved into the journal, want %d", mode, spilled[mode], want)
		}
	}
	for _, mode := range []string{"deliveries", "rows"} {
		if spilled[mode] < 10 {
			t.Errorf("%s: only %d of 40 histories moved into the journal part way: the test could not tell", mode, spilled[mode])
		}
	}
	for _, inv := range invariant.Checked(invariant.Database, nil) {
		if reached[inv.Name] == 0 {
			t.Errorf("no generated history broke %s: the test could not tell", inv.Name)
		}
	}
}

func show(vs []invariant.Violation) string {
	s := ""
	for _, v := range vs {
		s += fmt.Sprintf("%s %s %s by %+v\n", v.Invariant, v.EventID, v.Detail, v.By)
	}
	return s
}

// BenchmarkJournal measures what the journal costs per delivery once a
// replay is past the deliveries it keeps in memory: one in ten is a
// redelivery of the event before it.
func BenchmarkJournal(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	j.memDeliveries = 0
	ds := make([]*delivery, b.N)
	for i := range ds {
		e := i
		if i%10 == 9 {
			e = i - 1
		}
		kind, said := consumer.Acked, "acked (201)"
		if i%10 == 8 {
			kind, said = consumer.Unacked, "unacked (201, its ack dropped)"
		}
		res := consumer.Result{Outcome: kind}
		if kind == consumer.Unacked {
			res.Err = errors.New(said)
		}
		ds[i] = &delivery{Record: invariant.Record{Seq: i + 1, EventID: fmt.Sprintf("evt-%d", e), Key: fmt.Sprintf("O-%d", e),
			Result: res, Pos: consumer.Location{File: "c.ndjson", Line: e + 1}}, kind: kind, said: said, acked: true}
	}
	b.ResetTimer()
	for _, d := range ds {
		if _, err := j.Add(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.flush(ctx); err != nil {
		b.Fatal(err)
	}
	if err := j.commit(ctx); err != nil {
		b.Fatal(err)
	}
}
