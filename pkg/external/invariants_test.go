package external

import (
	"errors"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/invariant"
)

func delivery(id, key string, kind Kind, changed string) *Delivery {
	return &Delivery{Record: invariant.Record{EventID: id, Key: key}, Answer: Answer{Kind: kind}, Changed: changed}
}

func expected(d *Delivery) *Delivery {
	d.Expected = true
	return d
}

func TestJudge(t *testing.T) {
	row := func(key, event string) effects.Row { return effects.Row{Key: key, Event: event, Values: key + event} }
	tests := []struct {
		name    string
		history []*Delivery
		rows    []effects.Row
		want    []string // "invariant event"
	}{
		{"one acked delivery, one row", []*Delivery{delivery("e1", "O-1", Acked, "")}, []effects.Row{row("O-1", "e1")}, nil},
		{"two rows for one key", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Acked, "")}, []effects.Row{row("O-1", "e1"), row("O-1", "e1")}, []string{"duplicate-effect e1"}},
		{"acked without a row", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e2", "O-2", Acked, "")}, []effects.Row{row("O-1", "e1")}, []string{"lost-effect e2"}},
		{"unacked without a row is not lost, but never acked", []*Delivery{delivery("e1", "O-1", Unacked, ""), delivery("e1", "O-1", Unacked, "")}, nil, []string{"never-acked e1"}},
		{"rejected without a row is not lost, but never acked", []*Delivery{delivery("e1", "O-1", Rejected, "")}, nil, []string{"never-acked e1"}},
		{"unacked, then acked", []*Delivery{delivery("e1", "O-1", Unacked, ""), delivery("e1", "O-1", Acked, "")}, []effects.Row{row("O-1", "e1")}, nil},
		{"acked, then unacked", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Unacked, "")}, []effects.Row{row("O-1", "e1")}, nil},
		{"a conflict with a row of its key is an answer", []*Delivery{delivery("e1", "O-1", Conflict, "")}, []effects.Row{row("O-1", "e0")}, nil},
		{"a conflict with no row to conflict with is never acked", []*Delivery{delivery("e1", "O-1", Conflict, ""), delivery("e2", "O-2", Conflict, "")}, nil, []string{"never-acked e1", "never-acked e2"}},
		{"a conflict with no row, as the step expects", []*Delivery{expected(delivery("e1", "O-1", Conflict, ""))}, nil, nil},
		{"acked, then a conflict, the row gone", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Conflict, "")}, nil, []string{"lost-effect e1"}},
		{"unacked as the step expects", []*Delivery{expected(delivery("e1", "O-1", Unacked, ""))}, nil, nil},
		{"rejected as the step expects", []*Delivery{expected(delivery("e1", "O-1", Rejected, ""))}, nil, nil},
		{"rejected as expected, then unacked unexpectedly", []*Delivery{expected(delivery("e1", "O-1", Rejected, "")), delivery("e1", "O-1", Unacked, "")}, nil, []string{"never-acked e1"}},
		{"each event on its own", []*Delivery{delivery("e1", "O-1", Unacked, ""), delivery("e2", "O-2", Acked, "")}, []effects.Row{row("O-2", "e2")}, []string{"never-acked e1"}},
		{"a duplicate that changed the rows", []*Delivery{delivery("e1", "O-1", Acked, ""), {Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Acked}, Duplicated: "balance 10 became 20"}}, []effects.Row{row("O-1", "e1")}, []string{"changed-by-duplicate e1"}},
		{"a conflict that changed the rows", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Conflict, "1 became 2")}, []effects.Row{row("O-1", "e1")}, []string{"changed-by-conflict e1"}},
		{"an event published twice without a row is lost once", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Acked, "")}, nil, []string{"lost-effect e1"}},
		{"a conflict that changed nothing", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Conflict, "")}, []effects.Row{row("O-1", "e1")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range judge(tt.history, tt.rows, "payments") {
				got = append(got, string(v.Invariant)+" "+v.EventID)
				if v.Detail == "" {
					t.Errorf("%s has no detail", v.Invariant)
				}
			}
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("judge = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestConflictWithNothingSays: a conflict whose key has no row says so.
func TestConflictWithNothingSays(t *testing.T) {
	h := []*Delivery{{Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Conflict, Status: 409}}}
	v := judge(h, nil, "payments")
	if len(v) != 1 {
		t.Fatalf("judge = %v, want one never-acked", v)
	}
	if want := "event e1 was never acked in 1 delivery: conflict (409); key O-1 has no row in payments for it to conflict with"; v[0].Detail != want {
		t.Errorf("detail = %q, want %q", v[0].Detail, want)
	}
}

// TestNeverAckedSays: the finding names the event, how often it was
// delivered and the answers it got, each once.
func TestNeverAckedSays(t *testing.T) {
	h := []*Delivery{
		{Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Unacked, Status: 500}},
		{Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Unacked, Err: errors.New("connection reset")}},
		{Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Unacked, Status: 500}},
	}
	v := judge(h, nil, "payments")
	if len(v) != 1 {
		t.Fatalf("judge = %v, want one never-acked", v)
	}
	if want := "event e1 was never acked in 3 deliveries (redelivered 2 times): unacked (500), unacked (connection reset)"; v[0].Detail != want {
		t.Errorf("detail = %q, want %q", v[0].Detail, want)
	}
	if v[0].By != &h[2].Record {
		t.Error("the finding does not point at the last delivery")
	}
}
