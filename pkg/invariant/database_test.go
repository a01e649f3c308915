package invariant

import (
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// decidedElsewhere names, per kind of target whose decisions are not
// registered in the catalogue, where they are made.
var decidedElsewhere = map[Kind]string{
	// The built-in replay's aggregate queries are SQL of the SQLite
	// store's own schema, and run where its rows are (ledger.Store).
	Replay: "pkg/sqlite",
}

// TestEveryKindDecides walks the catalogue: an invariant a kind of target
// checks has that kind's decisions registered beside its wording, so that
// none is added half-way (named and worded, but never decided).
func TestEveryKindDecides(t *testing.T) {
	inJudged := map[*Invariant]int{}
	for _, inv := range judged {
		inJudged[inv]++
	}
	for _, inv := range All {
		for _, k := range []Kind{Handler, Replay, Database} {
			_, checks := inv.rules[k]
			var missing []string
			switch k {
			case Handler:
				if inv.decide == nil {
					missing = append(missing, "decide")
				}
			case Database:
				if inv.judgeRows == nil {
					missing = append(missing, "judgeRows")
				}
				if inv.judgeJournal == nil {
					missing = append(missing, "judgeJournal")
				}
				if inJudged[inv] != 1 {
					missing = append(missing, "its place in judged")
				}
			default:
				if decidedElsewhere[k] == "" {
					t.Errorf("%s: no decision of kind %s is registered", inv.Name, k)
				}
				continue
			}
			switch {
			case checks && len(missing) > 0:
				t.Errorf("%s has a %s rule but lacks %s", inv.Name, k, strings.Join(missing, ", "))
			case !checks && k == Database && (inv.judgeRows != nil || inv.judgeJournal != nil || inJudged[inv] > 0):
				t.Errorf("%s is judged in a user's database but has no %s rule", inv.Name, k)
			}
		}
	}
}

func answered(id, key string, answer consumer.Outcome) Answered {
	return Answered{Record: &Record{EventID: id, Key: key}, Answer: answer, ConsumerAcked: answer == consumer.Acked, Said: string(answer)}
}

// TestJudgeRows: each invariant a user's database checks is broken by one
// of these histories, the breaches given in the order judged lists them;
// a history that keeps them all breaks none.
func TestJudgeRows(t *testing.T) {
	row := func(key, event string) Row { return Row{Key: key, Event: event, Values: `["` + key + event + `"]`} }
	changedBy := func(d Answered, conflict, duplicate string) Answered {
		d.Changed, d.Duplicated = conflict, duplicate
		return d
	}
	tests := []struct {
		name    string
		history []Answered
		rows    []Row
		want    []string // "invariant event: detail"
	}{
		{"kept", []Answered{answered("e1", "O-1", consumer.Acked), answered("e1", "O-1", consumer.Conflict)}, []Row{row("O-1", "e1")}, nil},
		{"duplicate-effect", []Answered{answered("e1", "O-1", consumer.Acked), answered("e1", "O-1", consumer.Acked)}, []Row{row("O-1", "e1"), row("O-1", "e1")},
			[]string{"duplicate-effect e1: key O-1 has 2 rows in payments (events e1, e1)"}},
		{"lost-effect", []Answered{answered("e1", "O-1", consumer.Acked)}, nil,
			[]string{"lost-effect e1: event e1 was acked but key O-1 has no row in payments"}},
		{"never-acked", []Answered{answered("e1", "O-1", consumer.Unacked), answered("e1", "O-1", consumer.Unacked)}, nil,
			[]string{"never-acked e1: event e1 was never acked in 2 deliveries (redelivered once): unacked"}},
		{"changed-by-conflict", []Answered{answered("e1", "O-1", consumer.Acked), changedBy(answered("e1", "O-1", consumer.Conflict), "amount 1 became 2", "")}, []Row{row("O-1", "e1")},
			[]string{"changed-by-conflict e1: the conflicting redelivery of event e1 changed the row of key O-1 in payments: amount 1 became 2"}},
		{"changed-by-duplicate", []Answered{answered("e1", "O-1", consumer.Acked), changedBy(answered("e1", "O-1", consumer.Acked), "", "balance 1 became 2")}, []Row{row("O-1", "e1")},
			[]string{"changed-by-duplicate e1: the redelivery of event e1, whose effect was already committed, changed the rows of key O-1 in payments: balance 1 became 2"}},
		{"all at once, in the order judged lists them", []Answered{
			answered("e5", "O-5", consumer.Rejected),
			changedBy(answered("e4", "O-4", consumer.Acked), "", "balance 1 became 2"),
			changedBy(answered("e3", "O-3", consumer.Conflict), "amount 1 became 2", ""),
			answered("e2", "O-2", consumer.Acked),
			answered("e1", "O-1", consumer.Acked),
		}, []Row{row("O-1", "e1"), row("O-1", "e1"), row("O-3", "e0"), row("O-4", "e4")}, []string{
			"duplicate-effect e1: key O-1 has 2 rows in payments (events e1, e1)",
			"lost-effect e2: event e2 was acked but key O-2 has no row in payments",
			"changed-by-conflict e3: the conflicting redelivery of event e3 changed the row of key O-3 in payments: amount 1 became 2",
			"changed-by-duplicate e4: the redelivery of event e4, whose effect was already committed, changed the rows of key O-4 in payments: balance 1 became 2",
			"never-acked e5: event e5 was never acked in 1 delivery: rejected",
		}},
	}
	broken := map[Name]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range JudgeRows(tt.history, tt.rows, "payments") {
				got = append(got, string(v.Invariant)+" "+v.EventID+": "+v.Detail)
				broken[v.Invariant] = true
				if v.By == nil {
					t.Errorf("%s names no delivery", v.Invariant)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("JudgeRows =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	for _, inv := range Checked(Database, nil) {
		if !broken[inv.Name] {
			t.Errorf("no history breaks %s", inv.Name)
		}
	}
}

func TestDuplicated(t *testing.T) {
	cols := []string{"account", "balance", "updated_at"}
	r := func(vals string) []Row { return []Row{{Key: "A", Values: vals, Columns: cols}} }
	tests := []struct {
		name          string
		before, after []Row
		want          string
	}{
		{"unchanged", r(`["A","10","t1"]`), r(`["A","10","t1"]`), ""},
		{"one column", r(`["A","10","t1"]`), r(`["A","20","t1"]`), "balance 10 became 20"},
		{"two columns", r(`["A","10","t1"]`), r(`["A","20","t2"]`), "balance 10 became 20, updated_at t1 became t2"},
		{"a row added is duplicate-effect's", r(`["A","10","t1"]`), append(r(`["A","10","t1"]`), r(`["A","10","t1"]`)...), ""},
		{"a row removed is lost-effect's", r(`["A","10","t1"]`), nil, ""},
		{"a value from input is escaped", r(`["A","10","t1"]`), r("[\"A\",\"1\\n0\",\"t1\"]"), `balance 10 became "1\n0"`},
	}
	for _, tt := range tests {
		if got := Duplicated(tt.before, tt.after); got != tt.want {
			t.Errorf("%s: Duplicated = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestChanged(t *testing.T) {
	a := []Row{{Values: `["O-1","1"]`}}
	b := []Row{{Values: `["O-1","2"]`}}
	if Changed(a, a) != "" {
		t.Error("Changed reports a change between equal rows")
	}
	if Changed(a, b) == "" || Changed(a, nil) == "" {
		t.Error("Changed misses a change")
	}
}

func TestReference(t *testing.T) {
	cols := []string{"account", "balance", "created_at"}
	row := func(vals string) Row { return Row{Key: "A-1", Values: vals, Columns: cols} }
	tests := []struct {
		name          string
		first, second []Row
		after         []Row
		ok            bool
		want          string
	}{
		{"the same rows", []Row{row(`["A-1","40","t1"]`)}, []Row{row(`["A-1","40","t2"]`)}, []Row{row(`["A-1","40","t3"]`)}, true, ""},
		{"a stable column changed", []Row{row(`["A-1","40","t1"]`)}, []Row{row(`["A-1","40","t2"]`)}, []Row{row(`["A-1","160","t3"]`)}, true, "balance 40 became 160"},
		{"every column stable", []Row{row(`["A-1","40","t1"]`)}, []Row{row(`["A-1","40","t1"]`)}, []Row{row(`["A-1","80","t3"]`)}, true, "balance 40 became 80, created_at t1 became t3"},
		{"a row added is left to duplicate-effect", []Row{row(`["A-1","40","t1"]`)}, []Row{row(`["A-1","40","t2"]`)}, []Row{row(`["A-1","40","t3"]`), row(`["A-1","40","t4"]`)}, true, ""},
		{"a time alike in both trials is not compared", []Row{row(`["A-1","40","2026-12-02 15:13:57"]`)}, []Row{row(`["A-1","40","2026-12-02 15:13:57"]`)}, []Row{row(`["A-1","40","2026-12-02 15:13:58"]`)}, true, ""},
		{"nor one with a zone and fractions", []Row{row(`["A-1","40","2026-12-02 15:13:57.123456+00"]`)}, []Row{row(`["A-1","40","2026-12-02 15:13:57.123456+00"]`)}, []Row{row(`["A-1","160","2026-12-02T15:13:58Z"]`)}, true, "balance 40 became 160"},
		{"nor a date", []Row{row(`["A-1","40","2026-12-02"]`)}, []Row{row(`["A-1","40","2026-12-02"]`)}, []Row{row(`["A-1","40","2026-12-03"]`)}, true, ""},
		{"trials that disagree on the rows give none", []Row{row(`["A-1","40","t1"]`)}, nil, nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ok := NewReference(tt.first, tt.second)
			if ok != tt.ok {
				t.Fatalf("NewReference ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got := ref.Against(tt.after); got != tt.want {
				t.Errorf("Against = %q, want %q", got, tt.want)
			}
		})
	}
}
