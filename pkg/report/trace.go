package report

import (
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/runner"
)

// shownTrace is the trace a report shows of a check: whole where the
// check failed; where it passed, without the redelivery after a kill,
// which says nothing a passing check needs said.
func shownTrace(c *runner.CheckResult) []consumer.Statement {
	if !c.Passed {
		return c.Trace
	}
	for i, st := range c.Trace {
		if st.Redelivery {
			return c.Trace[:i]
		}
	}
	return c.Trace
}

// traceLines words the statements of the delivery a statement fault
// landed in, one a line (statementLines), with a line where the
// consumer's answer came when statements came after it: "← answered 202
// here".
//
// The statements of the redelivery that followed a kill come after a
// line of their own, RedeliveryHeading, and go on with the numbers; the
// values bound to a statement follow it on a line "bound: …" (each cut
// to a length and, when short, a few of them).
func traceLines(stmts []consumer.Statement, short bool) []string {
	lines := statementLines(stmts, short)
	out := make([]string, 0, len(lines)+1)
	again := false
	for i, line := range lines {
		if stmts[i].Redelivery && !again {
			again = true
			out = append(out, RedeliveryHeading)
		}
		if m := answeredMark(stmts[i]); m != "" {
			out = append(out, m)
		}
		out = append(out, line)
		if b := boundLine(stmts[i].Params, short); b != "" {
			out = append(out, "   "+b)
		}
	}
	return out
}

// RedeliveryHeading is the line of a trace that sets the statements of
// the redelivery after a kill apart from those of the killed attempt.
const RedeliveryHeading = "after the restart, the redelivery:"

// boundLine words the values bound to a statement: "bound: NULL,
// 'O-41', '41'"; each value cut to maxParam runes, and when short no
// more than maxParams of them. "" when none were seen.
func boundLine(ps []consumer.Param, short bool) string {
	if len(ps) == 0 {
		return ""
	}
	limit, count := 200, len(ps)
	if short {
		limit, count = 32, min(len(ps), 8)
	}
	words := make([]string, 0, count+1)
	for _, p := range ps[:count] {
		switch {
		case p.Null:
			words = append(words, "NULL")
		case p.Undecoded:
			words = append(words, "(binary, not read)")
		default:
			v := p.Text
			if r := []rune(v); len(r) > limit {
				v = string(r[:limit-1]) + "…"
			}
			words = append(words, "'"+v+"'")
		}
	}
	if count < len(ps) {
		words = append(words, fmt.Sprintf("… (%d more)", len(ps)-count))
	}
	return "bound: " + strings.Join(words, ", ")
}

// answeredMark is the line that says the consumer's answer came just
// before st, or "": a status or an exit was answered ("← answered 202
// here"); a broker's ack is said as it is ("← acked here"); behind a
// broker that shows no ack, the first statement says so.
func answeredMark(st consumer.Statement) string {
	w := st.AnsweredBefore
	switch {
	case w == "" && st.AckUnseen != "":
		return "← where the ack came is not known: " + st.AckUnseen + " shows no other client a consumer's ack"
	case w == "":
		return ""
	case w[0] >= '0' && w[0] <= '9', strings.HasPrefix(w, "exit "):
		return "← answered " + w + " here"
	case strings.HasSuffix(w, " at the latest"):
		return "← " + strings.TrimSuffix(w, " at the latest") + " here at the latest"
	}
	return "← " + w + " here"
}

// statementLines words each statement of a trace on a line: "worker 1:
// INSERT INTO payments … → INSERT 0 1", the held one marked with where
// the kill came. short cuts each statement to a line a terminal holds;
// the worker is named only when there were several ("worker ?" for a
// race's call to an external, whose worker is not known), and the
// started instance whose process held the connection when it is known
// ("worker 2 (instance 3)", or "instance 3" with one worker). A statement of
// the extended protocol says how it was prepared and, on the last of those
// one Sync ended, where the Sync fell (see protocolNote).
func statementLines(stmts []consumer.Statement, short bool) []string {
	workers := map[int]bool{}
	for _, st := range stmts {
		workers[st.Worker] = true
	}
	notes := protocolNotes(stmts)
	out := make([]string, 0, len(stmts))
	for i, st := range stmts {
		text := strings.Join(strings.Fields(st.Text), " ")
		if r := []rune(text); short && len(r) > 72 {
			text = string(r[:71]) + "…"
		}
		line := fmt.Sprintf("%d. %s", i+1, text)
		if st.External != "" {
			line += " (" + st.External + ")"
		}
		if notes[i] != "" {
			line += " [" + notes[i] + "]"
		}
		line = byWorker(line, st, len(workers) > 1)
		line += answerNote(st)
		out = append(out, line)
	}
	return out
}

// byWorker puts ahead of a statement's line the worker that sent it,
// when there were several, and the started instance whose process held
// the connection, when it is known.
func byWorker(line string, st consumer.Statement, several bool) string {
	switch {
	case several && st.Worker == 0:
		// A race's call: which worker made it is not known.
		return "worker ?: " + line
	case several && st.Instance > 0:
		return fmt.Sprintf("worker %d (instance %d): %s", st.Worker, st.Instance, line)
	case several:
		return fmt.Sprintf("worker %d: %s", st.Worker, line)
	case st.Instance > 0:
		return fmt.Sprintf("instance %d: %s", st.Instance, line)
	}
	return line
}

// answerNote ends a statement's line with its answer, and with where a
// hold or the kill stopped it when one did.
func answerNote(st consumer.Statement) string {
	if !st.Held {
		return " → " + answerOf(st)
	}
	if st.External != "" {
		return heldCallNote(st)
	}
	switch {
	case st.Released && st.Before:
		return fmt.Sprintf(" → %s ⏸ held here, before it reached the database, while the others ran", answerOf(st))
	case st.Released:
		return fmt.Sprintf(" → %s ⏸ answer held here while the others ran", answerOf(st))
	case st.Before:
		return " ✂ killed here, before it reached the database"
	}
	return fmt.Sprintf(" → %s ✂ killed here, before the consumer saw the answer", answerOf(st))
}

// heldCallNote is the answerNote of a held call to an external: whether
// the external performed it before the hold or the kill.
func heldCallNote(st consumer.Statement) string {
	switch {
	case st.Released && st.Before:
		return fmt.Sprintf(" → %s ⏸ held here, before %s performed it, while the others ran", answerOf(st), st.External)
	case st.Released:
		return fmt.Sprintf(" → %s ⏸ answer held here, its effect performed, while the others ran", answerOf(st))
	case st.Before:
		return fmt.Sprintf(" ✂ killed here, before %s performed it", st.External)
	}
	return fmt.Sprintf(" → %s ✂ killed here, its effect performed, before the consumer saw the answer", answerOf(st))
}

// traceHeading names a trace: the statements of the delivery, or its
// calls when it made calls to externals and no statement was seen.
func traceHeading(stmts []consumer.Statement) string {
	for _, st := range stmts {
		if st.External == "" {
			return "statements of the delivery:"
		}
	}
	return "calls of the delivery:"
}

// protocolNotes says, for each statement of the extended protocol, how
// it was prepared — "unnamed", or "named S" — and, on the last statement
// a Sync ended on its worker's connection, that the Sync came there:
// "Sync" when it ended that statement alone, "Sync for 2–4" (the
// statements' numbers in the trace) when it ended several together, "no
// Sync" when none came after them. A simple Query ends itself and has no
// note. The first statement a worker sent with MySQL's autocommit off
// (and the first after it was on again) says "autocommit off": from it
// on, a statement outside a transaction opened one.
func protocolNotes(stmts []consumer.Statement) []string {
	// The redelivery's connections are new ones: their Syncs are
	// counted afresh.
	type group struct {
		worker, sync int
		again        bool
	}
	members := map[group][]int{}
	for i, st := range stmts {
		if st.Extended {
			g := group{st.Worker, st.Sync, st.Redelivery}
			members[g] = append(members[g], i)
		}
	}
	notes := make([]string, len(stmts))
	implicit := map[group]bool{} // a worker's autocommit, by attempt
	for i, st := range stmts {
		if st.External == "" {
			w := group{st.Worker, 0, st.Redelivery}
			if st.Implicit && !implicit[w] {
				notes[i] = "autocommit off"
			}
			implicit[w] = st.Implicit
		}
		if st.Binary {
			notes[i] = join(notes[i], "prepared "+st.Name)
		}
		if !st.Extended {
			continue
		}
		prep := "unnamed"
		if st.Name != "" {
			name := st.Name
			if r := []rune(name); len(r) > 24 {
				name = string(r[:23]) + "…"
			}
			prep = "named " + name
		}
		notes[i] = join(notes[i], prep)
		m := members[group{st.Worker, st.Sync, st.Redelivery}]
		if m[len(m)-1] != i {
			continue
		}
		switch {
		case st.Sync == 0:
			notes[i] += ", no Sync"
		case len(m) == 1:
			notes[i] += ", Sync"
		default:
			notes[i] += ", Sync for " + numbers(m)
		}
	}
	return notes
}

// join is two notes of a statement, comma-separated; either may be "".
func join(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + ", " + b
}

// numbers words trace positions (0-based) as statement numbers: "2–4"
// when they follow one another, "2, 4, 5" otherwise.
func numbers(at []int) string {
	if at[len(at)-1]-at[0] == len(at)-1 {
		return fmt.Sprintf("%d–%d", at[0]+1, at[len(at)-1]+1)
	}
	s := make([]string, len(at))
	for i, n := range at {
		s[i] = fmt.Sprint(n + 1)
	}
	return strings.Join(s, ", ")
}

func answerOf(st consumer.Statement) string {
	switch {
	case st.Answer == "":
		return "no answer"
	case strings.HasPrefix(st.Answer, "SELECT "):
		n := strings.TrimPrefix(st.Answer, "SELECT ")
		if n == "1" {
			return "1 row"
		}
		return n + " rows"
	}
	return st.Answer
}

// StatementDoc is one statement of a trace in the JSON report.
type StatementDoc struct {
	Worker int    `json:"worker"`
	Text   string `json:"text"`
	Answer string `json:"answer"`
	// Killed says where the kill came at this statement: "before" it
	// reached the database, or "after" its answer; absent elsewhere.
	Killed string `json:"killed,omitempty"`
	// Held says where a race's schedule held this statement's worker
	// while the others ran: "before" or "after"; absent elsewhere.
	Held string `json:"held,omitempty"`
	// Prepared is, for a statement of the extended protocol, "named"
	// (Name its prepared statement's name) or "unnamed", and "named" for
	// an execute of MySQL's binary protocol (Name the statement's id);
	// absent for a simple Query.
	Prepared string `json:"prepared,omitempty"`
	Name     string `json:"name,omitempty"`
	// Sync numbers, on the statement's connection, the Sync that ended
	// it: the statements of one worker with the same number were ended
	// by one Sync. Absent while none came, and for a simple Query.
	Sync int `json:"sync,omitempty"`
	// AutocommitOff marks a statement that came on a MySQL connection
	// with autocommit off: outside a transaction it opened one, which
	// lasted until a COMMIT or ROLLBACK. Absent (false) elsewhere.
	AutocommitOff bool `json:"autocommit_off,omitempty"`
	// External names the stand-in of a call to an external (externals:)
	// interleaved with the statements; absent for a statement.
	External string `json:"external,omitempty"`
	// AnsweredBefore is the consumer's answer to the delivery ("202",
	// "exit 0"), on the first statement that came after it; absent
	// elsewhere.
	AnsweredBefore string `json:"answered_before,omitempty"`
	// AckUnseen names the broker that shows no other client a
	// consumer's ack (RabbitMQ), on a trace's first statement behind it.
	AckUnseen string `json:"ack_unseen,omitempty"`
	// Instance is the started instance (1, 2, …) whose process held the
	// statement's connection, behind a broker with several instances;
	// absent elsewhere.
	Instance int `json:"instance,omitempty"`
	// Redelivery marks a statement of the redelivery that followed the
	// kill and the restart: the trace's statements before the first so
	// marked are the killed attempt's. Absent (false) elsewhere.
	Redelivery bool `json:"redelivery,omitempty"`
	// Params are the values bound to the statement, in order (null for
	// a NULL), where the proxy saw them; a value in a binary format
	// redeliver does not read is {"binary": HEX}. Absent when none were
	// seen.
	Params []any `json:"params,omitempty"`
}

func statementDocs(stmts []consumer.Statement) []StatementDoc {
	if len(stmts) == 0 {
		return nil
	}
	out := make([]StatementDoc, len(stmts))
	for i, st := range stmts {
		out[i] = StatementDoc{Worker: st.Worker, Text: st.Text, Answer: st.Answer, Name: st.Name, Sync: st.Sync, External: st.External, AnsweredBefore: st.AnsweredBefore, AckUnseen: st.AckUnseen, Instance: st.Instance, Redelivery: st.Redelivery, AutocommitOff: st.Implicit}
		for _, p := range st.Params {
			switch {
			case p.Null:
				out[i].Params = append(out[i].Params, nil)
			case p.Undecoded:
				out[i].Params = append(out[i].Params, map[string]string{"binary": p.Text})
			default:
				out[i].Params = append(out[i].Params, p.Text)
			}
		}
		if st.Binary {
			out[i].Prepared = "named"
		}
		if st.Extended {
			out[i].Prepared = "unnamed"
			if st.Name != "" {
				out[i].Prepared = "named"
			}
		}
		if st.Held {
			where := "after"
			if st.Before {
				where = "before"
			}
			if st.Released {
				out[i].Held = where
			} else {
				out[i].Killed = where
			}
		}
	}
	return out
}
