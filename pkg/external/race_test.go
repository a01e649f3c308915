package external

import (
	"fmt"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestMatchLanes: the held connection is the held worker's; with two
// workers on two connections the other is the other's; beyond that
// nothing is claimed.
func TestMatchLanes(t *testing.T) {
	stmt := func(conn int, held bool) consumer.Statement {
		return consumer.Statement{Worker: conn, Text: "SELECT 1", Held: held}
	}
	for _, tt := range []struct {
		name     string
		stmts    []consumer.Statement
		heldLane int
		workers  int
		want     []int
	}{
		{"connection 1 held, worker 2's", []consumer.Statement{stmt(1, true), stmt(2, false), stmt(2, false), stmt(1, false)}, 2, 2, []int{2, 1, 1, 2}},
		{"connection 2 held, worker 2's", []consumer.Statement{stmt(1, false), stmt(2, true), stmt(1, false)}, 2, 2, []int{1, 2, 1}},
		{"three workers: only the held one is known", []consumer.Statement{stmt(1, true), stmt(2, false), stmt(3, false)}, 3, 3, []int{3, 0, 0}},
		{"two workers on three connections", []consumer.Statement{stmt(1, true), stmt(2, false), stmt(3, false)}, 1, 2, []int{1, 0, 0}},
		{"nothing held", []consumer.Statement{stmt(1, false), stmt(2, false)}, 1, 2, []int{0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			matchLanes(tt.stmts, tt.heldLane, tt.workers)
			var got []int
			for _, st := range tt.stmts {
				got = append(got, st.Lane)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("the statements' workers are %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBlameTheExtraEffect: two workers raced one event and both paid;
// the payment that came second, in the order the database saw the
// statements, is the extra one, and the delivery whose connection made
// it broke duplicate-effect, whichever the judge named.
func TestBlameTheExtraEffect(t *testing.T) {
	rec := func(seq, lane int) *Delivery {
		return &Delivery{Record: invariant.Record{Seq: seq, Check: 1, Step: 1, EventID: "evt-1", Key: "O-1", Span: invariant.Span{Lane: lane}}}
	}
	trace := []consumer.Statement{
		{Worker: 1, Lane: 2, Text: "SELECT 1 FROM payments WHERE order_id = $1", Answer: "SELECT 0", Held: true, Released: true},
		{Worker: 2, Lane: 1, Text: "SELECT 1 FROM payments WHERE order_id = $1", Answer: "SELECT 0"},
		{Worker: 2, Lane: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		{Worker: 2, Lane: 1, Text: "COMMIT", Answer: "COMMIT"},
		{Worker: 1, Lane: 2, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		{Worker: 1, Lane: 2, Text: "INSERT INTO processed (id) VALUES ($1)", Answer: "INSERT 0 1"},
		{Worker: 1, Lane: 2, Text: "COMMIT", Answer: "COMMIT"},
	}
	for _, tt := range []struct {
		name    string
		history []*Delivery // an earlier schedule's first
		by      int         // the Seq the judge named
		trace   []consumer.Statement
		want    int
	}{
		{"the judge named the first to answer", []*Delivery{rec(1, 1), rec(2, 2), rec(3, 1), rec(4, 2)}, 3, trace, 4},
		{"the judge named the right one", []*Delivery{rec(3, 1), rec(4, 2)}, 4, trace, 4},
		{"the workers are not known", []*Delivery{rec(3, 1), rec(4, 2)}, 3, []consumer.Statement{{Worker: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"}}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sys := &system{sess: &Session{fx: &scenario.Effects{Table: "payments"}}, history: tt.history}
			var by invariant.Record
			for _, d := range tt.history {
				if d.Seq == tt.by {
					by = d.Record
				}
			}
			vs := []invariant.Violation{{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1", By: &by}}
			sys.blameStatements(vs, tt.trace)
			if vs[0].By.Seq != tt.want {
				t.Errorf("duplicate-effect is blamed on delivery #%d, want #%d", vs[0].By.Seq, tt.want)
			}
		})
	}
}
