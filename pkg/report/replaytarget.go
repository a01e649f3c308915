package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report/words"
)

// replayExamples is how many examples of one broken invariant a replay's
// text report shows without -v (the built-in replay keeps no more).
const replayExamples = 5

// replayName names a replay by the captures given, when its report
// says them: a replay into a target does, and one that stopped first has
// neither name nor line; the built-in replay's header names its captures
// instead.
func replayName(r *replay.Report) string {
	t := r.Target
	if t == nil || len(t.Given) == 0 {
		return ""
	}
	if len(t.Given) == 1 {
		return "replay of " + t.Given[0] + " into the target"
	}
	return fmt.Sprintf("replay of %d capture(s) into the target", len(t.Given))
}

// replayLine is a replay's line, for a replay that has a name (see
// replayName): its deliveries (or a broker's publishes), its crashes by
// when they came and the effect rows of the whole table, then the kills
// of --kill-every or --kill-working, the bad records skipped and the
// invariants caught.
func replayLine(rep *replay.Report) string {
	if replayName(rep) == "" {
		return ""
	}
	t := rep.Target
	where := "from the effects query"
	if t.Table != "" {
		where = "in " + t.Table
	}
	line := countersLine(rep.Counters, t.Broker, where)
	if k := t.Kills; k != nil {
		line += "; " + words.KillPace(k.Count, k.Asked, k.Every, k.Restart)
	}
	if k := t.Working; k != nil {
		line += "; " + workingKills(k)
	}
	if h := t.HeldBack; h != nil {
		line += "; " + words.HeldBack(h.Messages, h.Restarts, h.KilledAtStop, consumer.StopGrace)
	}
	if skipped := rep.Capture.BadRecords; skipped > 0 {
		line += "; " + words.Count(skipped, "bad record") + " skipped (--max-bad)"
	}
	if len(rep.Violations) > 0 {
		var names []string
		for _, v := range rep.Violations {
			names = append(names, v.Invariant)
		}
		line += "; caught " + strings.Join(names, ", ")
	}
	return line
}

// countersLine is the start of a replay into a target's line: its
// deliveries (or a broker's publishes), its crashes by when they came,
// and the effect rows of the whole table (where: "in payments").
func countersLine(c consumer.Counters, broker bool, where string) string {
	crashes := words.Crashes(c.Interrupted())
	if crashes == "" {
		crashes = "0 crashes"
	}
	deliveries := fmt.Sprintf("%d deliveries", c.Deliveries)
	if c.Deliveries == 1 {
		deliveries = "1 delivery"
	}
	line := fmt.Sprintf("%s (%d acked, %d conflicts, %d not acked, %s), %s %s", deliveries, c.Processed, c.Conflicts, c.Failed, crashes, words.Count(int64(c.Effects), "effect row"), where)
	if broker {
		line = fmt.Sprintf("%d published, %d instance kills, ", c.Published, c.Crashed)
		if c.Uncounted {
			line += "redeliveries not counted by the broker"
		} else {
			line += fmt.Sprintf("%d redelivered by the broker", c.BrokerRedelivered)
		}
		line += fmt.Sprintf(", %s %s", words.Count(int64(c.Effects), "effect row"), where)
	}
	if c.InterruptedNone() {
		line += "; " + words.NotInterrupted(c.Crashed)
	}
	return line
}

// workingKills says what --kill-working did.
func workingKills(k *replay.WorkingKills) string {
	return words.WorkingKills(k.Probability, k.Drawn, k.Killed, k.Interrupted, k.Missed, k.Untied)
}

// breach is one example of a broken invariant as a line: its detail and
// the capture line of the delivery behind it.
func breach(x replay.Example) string {
	if len(x.At) > 0 {
		return fmt.Sprintf("%s (%s)", x.Detail, consumer.Location(x.At[0]))
	}
	return x.Detail
}

// targetCounterLine is what -v adds to a target's report: its counters,
// which are the consumer's answers; the handler's words do not apply.
func targetCounterLine(c consumer.Counters) string {
	s := fmt.Sprintf("counters (target): %s, %s, %d acked, %s, %d rejected or unacked, %s, %s",
		n(c.Deliveries, "delivery", "deliveries"), n(c.Redeliveries, "redelivery", "redeliveries"), c.Processed, n(c.Conflicts, "conflict", "conflicts"),
		c.Failed, n(c.Crashed, "crash", "crashes"), n(c.Effects, "effect row", "effect rows"))
	if c.Published > 0 {
		s += fmt.Sprintf("; broker: %d published, ", c.Published)
		if c.Uncounted {
			s += "redeliveries not counted by the broker"
		} else {
			s += fmt.Sprintf("%d redelivered by the broker", c.BrokerRedelivered)
		}
	}
	if c.HeldBack > 0 || c.KilledAtStop > 0 {
		s += "; " + words.HeldBack(c.HeldBack, c.HeldBackRestarts, c.KilledAtStop, consumer.StopGrace)
	}
	return s
}

// ReplayCoverage is --coverage for a replay into a target: what the
// replay injected, from --seed, and when each kill came against the
// consumer's answer (before it: the kill interrupted a delivery), so a
// replay whose kills all came after the answer says it tested no crash
// mid-delivery. A report with the built-in handler's outcomes has no
// such section: its injected: line says what it injected at the
// handler's fault points, and no kill comes against an answer.
func ReplayCoverage(w io.Writer, r *Replay) error {
	rep := r.Report
	if !answers(rep) {
		return nil
	}
	in, c := rep.Injected, rep.Counters
	var b strings.Builder
	fmt.Fprintf(&b, "coverage: what the replay injected (seed %d)\n", rep.Seed)
	fmt.Fprintf(&b, "  --redeliver: %s lost, each event delivered again\n", count(in.Redelivered, "ack", "acks"))
	kills := "no kill of the consumer"
	if c.Crashed > 0 {
		before, _, unknown := c.Interrupted()
		kills = words.Crashes(c.Interrupted())
		switch {
		case c.InterruptedNone():
			kills += "; " + words.NotInterrupted(c.Crashed)
		case before > 0:
			kills += "; a kill before the answer interrupted a delivery"
		case unknown > 0:
			// A broker's instance kills land on whatever the instance
			// held, which the broker does not say.
			kills += "; redeliver does not know whether any interrupted a delivery: it killed consumer instances, not a delivery it made"
		}
	}
	if t := rep.Target; t != nil && t.Working != nil {
		k := t.Working
		fmt.Fprintf(&b, "  %s\n", workingKills(k))
	} else {
		fmt.Fprintf(&b, "  --crash, --kill-every: %s\n", kills)
	}
	fmt.Fprintf(&b, "  --concurrent: %s delivered twice at once\n", count(in.Concurrent, "event", "events"))
	fmt.Fprintf(&b, "  --rewind: %s delivered again, in %s\n", count(in.Rewound, "event", "events"), count(in.Rebalances, "rebalance", "rebalances"))
	_, err := io.WriteString(w, b.String())
	return err
}

// shownLogs is how many consumer output files the text report names;
// the JSON report names every one.
const shownLogs = 6

// logFiles names the files that keep the consumer's output.
func logFiles(files []string) string {
	if len(files) <= shownLogs {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more in %s (every one in the JSON report)", strings.Join(files[:shownLogs], ", "), len(files)-shownLogs, filepath.Dir(files[0]))
}

// patternGroups groups a broken invariant's breaches by the pattern
// their kill's statements show (pkg/diagnose), in the order each pattern
// first came: "why: effect and marker apart: 2 keys (O-3, O-9)"; the
// breaches of no kept trace last. None when no breach has a diagnosis.
func patternGroups(xs []replay.Example, verbose bool) []string {
	var order []string
	keys := map[string][]string{}
	for _, x := range xs {
		k := x.Key
		if k == "" {
			k = x.Event
		}
		if _, ok := keys[x.Pattern]; !ok {
			order = append(order, x.Pattern)
		}
		keys[x.Pattern] = append(keys[x.Pattern], k)
	}
	if len(order) == 1 && order[0] == "" {
		return nil
	}
	var out []string
	for _, p := range append(slices.DeleteFunc(slices.Clone(order), func(p string) bool { return p == "" }), "") {
		ks, ok := keys[p]
		if !ok {
			continue
		}
		name := "no kill of its own traced"
		if p != "" {
			name = diagnose.Pattern(p).Words()
		}
		shown := ks
		if !verbose && len(shown) > replayExamples {
			shown = shown[:replayExamples]
		}
		list := strings.Join(shown, ", ")
		if len(shown) < len(ks) {
			list += ", …"
		}
		out = append(out, fmt.Sprintf("why: %s: %s (%s)", name, count(int64(len(ks)), "breach", "breaches"), list))
	}
	return out
}
