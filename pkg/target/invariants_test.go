package target

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/invariant"
)

func delivery(id, key string, kind Kind, changed string) *Delivery {
	return &Delivery{Record: invariant.Record{EventID: id, Key: key}, Answer: Answer{Kind: kind}, Changed: changed}
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
		{"unacked without a row is not lost", []*Delivery{delivery("e1", "O-1", Unacked, "")}, nil, nil},
		{"rejected without a row is not lost", []*Delivery{delivery("e1", "O-1", Rejected, "")}, nil, nil},
		{"a conflict that changed the rows", []*Delivery{delivery("e1", "O-1", Acked, ""), delivery("e1", "O-1", Conflict, "1 became 2")}, []effects.Row{row("O-1", "e1")}, []string{"changed-by-conflict e1"}},
		{"a publish dropped by the duplicate window is not lost", []*Delivery{{Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Acked, Duplicate: true}}}, nil, nil},
		{"a published event without a row is lost", []*Delivery{delivery("e1", "O-1", Acked, ""), {Record: invariant.Record{EventID: "e1", Key: "O-1"}, Answer: Answer{Kind: Acked, Duplicate: true}}}, nil, []string{"lost-effect e1"}},
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

func TestChanged(t *testing.T) {
	a := []effects.Row{{Values: `["O-1","1"]`}}
	b := []effects.Row{{Values: `["O-1","2"]`}}
	if changed(a, a) != "" {
		t.Error("changed reports a change between equal rows")
	}
	if changed(a, b) == "" || changed(a, nil) == "" {
		t.Error("changed misses a change")
	}
}
