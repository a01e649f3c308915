package words

import (
	"fmt"
	"strings"
	"time"
)

// KillPace says how far apart the kills of --kill-every came: "one kill
// every 8.1s on average (asked every 2s, counted from when the previous
// restart was ready; restarts took 6.1s on average)", or that none came
// within the period asked.
func KillPace(kills int, asked, every, restart time.Duration) string {
	if kills == 0 {
		return fmt.Sprintf("no kill: the run ended within the first %s", round(asked))
	}
	return fmt.Sprintf("one kill every %s on average (asked every %s, counted from when the previous restart was ready; restarts took %s on average)",
		round(every), round(asked), round(restart))
}

// round keeps a duration's figures a reader uses: milliseconds below a
// second, hundredths of a second above.
func round(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

// WorkingKills says what --kill-working p did: "--kill-working 1: 20
// deliveries drawn, 15 instance kills at their statements, 12 of them
// interrupting a delivery (3 after its transaction ended); 5 drawn
// deliveries ended before the boundary drawn (not killed)". Of the drawn
// deliveries, killed were killed at a statement, interrupted of those
// before their work ended, missed ended before the boundary drawn, and
// untied had no statement tied to them.
func WorkingKills(p float64, drawn, killed, interrupted, missed, untied int) string {
	s := fmt.Sprintf("--kill-working %v: %s drawn", p, Count(int64(drawn), "delivery"))
	if drawn == 0 {
		return s
	}
	s += fmt.Sprintf(", %s at their statements, %d of them interrupting a delivery", Count(int64(killed), "instance kill"), interrupted)
	if after := killed - interrupted; after > 0 {
		s += fmt.Sprintf(" (%d after its transaction ended)", after)
	}
	var rest []string
	if missed > 0 {
		rest = append(rest, Count(int64(missed), "drawn delivery")+" ended before the boundary drawn (not killed)")
	}
	if untied > 0 {
		rest = append(rest, Count(int64(untied), "drawn delivery")+" with no statement tied to it by its event id or key (not killed)")
	}
	if len(rest) > 0 {
		s += "; " + strings.Join(rest, "; ")
	}
	return s
}

// HeldBack words what stopping a RabbitMQ consumer's instances at the end
// of its drain put back: "the instances, stopped once the queue stood
// empty, still held 3 messages unacknowledged; started again once to
// take them", and how many of them did not end within grace of their
// SIGTERM and were killed: "…; an instance did not end within 5s of its
// SIGTERM, and the stop ended it with SIGKILL" (a stop's, not one of the
// instance kills the counters count).
func HeldBack(messages, restarts, killed int, grace time.Duration) string {
	s := "the instances, stopped once the queue stood empty, held nothing unacknowledged"
	if messages > 0 {
		again := "once"
		if restarts != 1 {
			again = Count(int64(restarts), "time")
		}
		s = fmt.Sprintf("the instances, stopped once the queue stood empty, still held %s unacknowledged; started again %s to take them", Count(int64(messages), "message"), again)
	}
	switch {
	case killed == 1:
		s += fmt.Sprintf("; an instance did not end within %s of its SIGTERM, and the stop ended it with SIGKILL", grace)
	case killed > 1:
		s += fmt.Sprintf("; %d times an instance did not end within %s of its SIGTERM, and the stop ended it with SIGKILL", killed, grace)
	}
	return s
}
