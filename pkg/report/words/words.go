// Package words holds the sentences a report prints about a check that are
// not an invariant's (those are worded by the catalogue, package
// invariant): which step, a failed expectation with what was expected and
// what came, a check's summary line, a repeated check's tally, the kills
// of --kill-every and --kill-working. Only pkg/report words with it, from
// the facts what runs a check keeps (pkg/runner's Line and Miss, a
// replay's report), so one expectation reads the same from every kind of
// consumer and in every format.
//
// It imports no other package of this module.
package words

import (
	"fmt"
	"strconv"
	"strings"
)

// Miss is one expectation that did not hold: the sentence, and the
// expected and actual values as the structured reports carry them.
type Miss struct {
	Message, Expected, Got string
}

// Step names where an expectation was checked: "the check" (its expect
// block), "step 3", or "step 3 (delivery 2 of 5)" for a repeated delivery.
func Step(step, n, of int) string {
	s := "the check"
	if step > 0 {
		s = "step " + strconv.Itoa(step)
	}
	if of > 1 {
		s += fmt.Sprintf(" (delivery %d of %d)", n, of)
	}
	return s
}

// Count says "1 row", "2 rows", "2 crashes".
func Count(n int64, one string) string {
	switch {
	case n == 1:
		return "1 " + one
	case strings.HasSuffix(one, "sh"):
		return fmt.Sprintf("%d %ses", n, one)
	case len(one) > 1 && one[len(one)-1] == 'y' && !strings.ContainsRune("aeiou", rune(one[len(one)-2])):
		return fmt.Sprintf("%d %sies", n, one[:len(one)-1])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// List joins names, or says none.
func List(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// Event names an event, with its consumer when one is given.
func Event(id, consumer string) string {
	if consumer != "" {
		return id + " (consumer " + consumer + ")"
	}
	return id
}

// Outcome: a delivery came back with another outcome (or answer) than
// expected; got may carry the error in brackets.
func Outcome(step, want, got, gotSaid string) Miss {
	return Miss{fmt.Sprintf("%s expected %s, got %s", step, want, gotSaid), want, got}
}

// Status: a consumer answered with another HTTP status than expected.
func Status(step string, want int, got int, answer string) Miss {
	g := "no status"
	if got != 0 {
		g = strconv.Itoa(got)
	}
	return Miss{fmt.Sprintf("%s expected status %d, got %s", step, want, answer), strconv.Itoa(want), g}
}

// Error: a delivery was expected to fail with an error containing want;
// got is nil when it did not fail.
func Error(step, want string, got error) Miss {
	expected := "error containing " + strconv.Quote(want)
	if got == nil {
		return Miss{fmt.Sprintf("%s expected an error containing %q, got no error", step, want), expected, "no error"}
	}
	return Miss{fmt.Sprintf("%s expected an error containing %q, got %q", step, want, got.Error()), expected, got.Error()}
}

// SameEffect: a delivery was expected to return the effect of the
// delivery labelled label.
func SameEffect(step, label string, want, got int64) Miss {
	return Miss{fmt.Sprintf("%s expected the effect of %q (id %d), got effect id %d", step, label, want, got),
		fmt.Sprintf("effect %d", want), fmt.Sprintf("effect %d", got)}
}

// Rows: a table holds another number of rows than expected.
func Rows(step string, want int64, table string, got int64) Miss {
	return Miss{fmt.Sprintf("%s expected %s in %s, got %d", step, Count(want, "row"), table, got), itoa(want), itoa(got)}
}

// KeyRows: a user's effect table holds another number of rows for a key.
func KeyRows(step string, want int64, key string, got int64) Miss {
	return Miss{fmt.Sprintf("%s expected %s for key %s, got %d", step, Count(want, "effect row"), key, got), itoa(want), itoa(got)}
}

// ExternalEffects: an external was expected to have performed want
// effects under key, and performed got.
func ExternalEffects(step string, want int64, external, key string, got int64) Miss {
	return Miss{fmt.Sprintf("%s expected %s at %s for key %s, got %d", step, Count(want, "effect"), external, key, got), itoa(want), itoa(got)}
}

// CallNotReached: a crash at an external call never met the call; calls
// lists those the delivery made.
func CallNotReached(what, calls, answer string) Miss {
	return Miss{Message: fmt.Sprintf("%s was never reached: the delivery made %s, and the consumer answered %s", what, calls, answer), Expected: what, Got: "not reached"}
}

// Marked: an event was expected to be marked processed (or not), and was
// not (or was).
func Marked(step, event string, want bool) Miss {
	if want {
		return Miss{fmt.Sprintf("%s expected %s to be marked processed, it is not", step, event), "marked processed", "not marked"}
	}
	return Miss{fmt.Sprintf("%s expected %s not to be marked processed, it is", step, event), "not marked", "marked processed"}
}

// Charges: the gateway holds another number of charges than expected.
func Charges(step string, want, got int) Miss {
	return Miss{fmt.Sprintf("%s expected %s at the gateway, got %d", step, Count(int64(want), "charge"), got), strconv.Itoa(want), strconv.Itoa(got)}
}

// Violations: a check declared which invariants break, and others broke.
func Violations(want, got []string) Miss {
	return Miss{fmt.Sprintf("expected exactly the violations %s, got %s", List(want), List(got)), List(want), List(got)}
}

// Tally is one count of a summary line: "3 duplicates", "1 processed".
type Tally struct {
	N    int
	Word string
	// Plural: the word takes an s when N is not 1 ("duplicate"); without
	// it the word stays ("processed", "acked").
	Plural bool
	// Said, when set, is the whole tally in words, N and all.
	Said string
}

// Crashes words a target's crashes by when each came against the
// consumer's answer: "3 crashes before the answer", "1 crash after the
// answer", "5 crashes (4 before the answer, 1 after)", and for a broker's
// instance kills, which redeliver cannot place, "2 crashes, not known
// whether before the consumer's ack".
func Crashes(before, after, unknown int) string {
	n := before + after + unknown
	all := Count(int64(n), "crash")
	var parts []string
	if before > 0 {
		parts = append(parts, fmt.Sprintf("%d before the answer", before))
	}
	if after > 0 {
		parts = append(parts, fmt.Sprintf("%d after", after))
	}
	if unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d not known whether before the consumer's ack", unknown))
	}
	switch {
	case n == 0:
		return ""
	case before == n:
		return all + " before the answer"
	case after == n:
		return all + " after the answer"
	case unknown == n:
		return all + ", not known whether before the consumer's ack"
	}
	if after > 0 && before == 0 {
		parts[0] = fmt.Sprintf("%d after the answer", after)
	}
	return all + " (" + strings.Join(parts, ", ") + ")"
}

// NotInterrupted is what the line of a check whose n crashes all came
// after the consumer's answer adds: they interrupted no delivery.
func NotInterrupted(n int) string {
	if n == 1 {
		return "the crash came after the answer: it interrupted no delivery"
	}
	return fmt.Sprintf("all %d crashes came after the answer: none interrupted a delivery", n)
}

// Summary is the line of a check that has no say: its deliveries and the
// tallies that are not zero, then the rest (e.g. "2 effect rows"), then the
// invariants it caught. A check without deliveries says its state was as
// expected.
func Summary(deliveries int, tallies []Tally, rest string, caught []string) string {
	var parts []string
	for _, t := range tallies {
		switch {
		case t.N == 0:
		case t.Said != "":
			parts = append(parts, t.Said)
		case t.Plural:
			parts = append(parts, Count(int64(t.N), t.Word))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", t.N, t.Word))
		}
	}
	s := Count(int64(deliveries), "delivery")
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if rest != "" {
		s += "; " + rest
	}
	if deliveries == 0 {
		s = "state as expected"
	}
	if len(caught) > 0 {
		s += "; caught " + strings.Join(caught, ", ")
	}
	return s
}

// Repeated words a check run several times: the line of one that passed
// in every run gains the tally; the first failure of one that did not
// gains how often and in which run it failed first.
func Repeated(line string, runs, failed, first int, broken []string) string {
	what := List(broken)
	if failed == 0 {
		return fmt.Sprintf("%s (%d runs: %d passed, invariants broken: %s)", line, runs, runs, what)
	}
	return fmt.Sprintf("failed in %d of %d runs (invariants broken: %s); first in run %d: %s", failed, runs, what, first, line)
}

// Explored words a check run under several schedules (a race explored):
// the line of one that passed in every schedule gains how many were tried,
// and in how many each invariant broke; the first failure of one that did
// not gains how often, and the first schedule that failed, by name, so that
// it can be written as interleave.
func Explored(line string, schedules, failed, first int, name string, broken []string) string {
	if failed == 0 {
		if len(broken) == 0 {
			return fmt.Sprintf("%s (%d schedules)", line, schedules)
		}
		return fmt.Sprintf("%s (%d schedules, caught %s)", line, schedules, strings.Join(broken, ", "))
	}
	return fmt.Sprintf("failed in %d of %d schedules; first in schedule %d (%s): %s", failed, schedules, first, name, line)
}

// InNoSchedule words a failure that no schedule of an explored check
// answered: a declared violation that broke in none of them.
func InNoSchedule(message string, schedules int) string {
	return fmt.Sprintf("%s (in %d schedules)", message, schedules)
}

// Hold names how racing workers were let go in one schedule: unforced, or
// held at a fault point and released together or in worker order — what
// `interleave:` would write.
func Hold(at string, inOrder bool) string {
	switch {
	case at == "":
		return "unforced"
	case inOrder:
		return "held at " + at + ", released in order"
	}
	return "held at " + at + ", released together"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// NotReached words a statement fault whose boundary the delivery never
// reached: what the file asked for, the statements the delivery ran
// (each with its answer), and how the consumer answered.
func NotReached(what string, statements []string, answer string) Miss {
	ran := "ran no statement"
	if len(statements) > 0 {
		ran = fmt.Sprintf("ran %d: %s", len(statements), strings.Join(statements, "; "))
	}
	return Miss{
		Message:  fmt.Sprintf("%s was never reached: the delivery %s, and the consumer answered %s", what, ran, answer),
		Expected: what,
		Got:      "not reached",
	}
}

// Unreached says how many schedules of an explored race held at a
// boundary no worker reached: those runs went unforced.
func Unreached(n int) string {
	if n == 1 {
		return "1 schedule's boundary was not reached (the workers took another path) and ran unforced"
	}
	return fmt.Sprintf("%d schedules' boundaries were not reached (the workers took another path) and ran unforced", n)
}

// Unraced says how many schedules of a race behind a broker held a
// worker while no statement of another copy ran: the copies went one
// after the other, and those holds raced nothing.
func Unraced(n int) string {
	if n == 1 {
		return "1 schedule raced nothing: no other copy ran while its worker was held (the broker handed the copies to one instance, one after the other)"
	}
	return fmt.Sprintf("%d schedules raced nothing: no other copy ran while their worker was held (the broker handed the copies to one instance, one after the other)", n)
}

// NeverRaced fails a race behind a broker none of whose n held
// schedules raced anything.
func NeverRaced(n int) string {
	return fmt.Sprintf("none of the %d schedules raced the copies: in each, no other copy ran while a worker was held — the broker handed them to one instance, one after the other; give each instance one message at a time (a prefetch of 1) and at least as many instances as copies", n)
}

// InterruptedNothing says how many schedules of a check explored at its
// statements killed the consumer after its answer and after the
// delivery's last statement, every transaction of it over: those kills
// interrupted nothing, and tested nothing.
func InterruptedNothing(n int) string {
	if n == 1 {
		return "1 schedule's kill came after the answer and after the delivery's last statement, its work over: it interrupted nothing"
	}
	return fmt.Sprintf("%d schedules' kills came after the answer and after the delivery's last statement, its work over: they interrupted nothing", n)
}

// WrotePast words a delivery whose statements through the database proxy
// (url names it) only read, while its effect rows changed: the consumer
// wrote past the proxy, and no boundary of its writes was tried.
func WrotePast(id, url string, stmts []string) Miss {
	return Miss{Message: fmt.Sprintf("the consumer wrote to the database without going through %s: the delivery of %s changed the effect rows, and the statements it ran through %s only read (%s), so no boundary of its writes was tried", url, id, url, strings.Join(stmts, "; ")),
		Expected: "its writes through " + url, Got: "reads only"}
}

// Bypassed words a statement fault that had no statement to land at: the
// delivery of event id ran none through the database proxy (url names
// it, as ${REDELIVER_DB_URL}). wrote says its effect rows changed all the
// same: the consumer wrote to the database past the proxy.
func Bypassed(id, url string, wrote bool) Miss {
	msg := fmt.Sprintf("the delivery of %s ran no statement through %s, so no statement boundary was tried: does the consumer connect through %s?", id, url, url)
	if wrote {
		msg = fmt.Sprintf("the consumer wrote to the database without going through %s: the delivery of %s changed the effect rows and ran no statement through it, so no statement boundary was tried", url, id)
	}
	return Miss{Message: msg, Expected: "statements through " + url, Got: "no statement"}
}

// Untied words a statement fault behind a broker that found no statement
// of the delivery of event id (key key): none of those the consumer ran
// through url while it was in flight carried the id or the key, as a
// bound value or in its text, and only they tell the delivery's
// statements from the others. stmts are the ones it saw, none held.
func Untied(what, id, key, url string, stmts []string) Miss {
	ran := "ran no statement through " + url
	if len(stmts) > 0 {
		ran = fmt.Sprintf("ran %d through %s, none of them tied: %s", len(stmts), url, strings.Join(stmts, "; "))
	}
	return Miss{
		Message:  fmt.Sprintf("%s found no statement of the delivery of %s: behind a broker a statement is the delivery's when it carries the event id %s or the key %s (a bound value, or in its text), or runs in a transaction that does, and while %s was in flight the consumer %s; no kill landed", what, id, id, key, id, ran),
		Expected: "statements tied to " + id + " through " + url,
		Got:      "none tied",
	}
}
