package report

import (
	"slices"

	"fmt"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"io"
	"path/filepath"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report/words"
)

// replayExamples is how many breaches of one invariant a target replay's
// text report shows without -v, as the built-in replay shows its examples.
const replayExamples = 5

// targetReplayText writes a replay into a target the way the built-in
// replay's report reads: the target, the replay's line (its deliveries,
// crashes and effect rows, on a FAIL too), then each broken invariant
// with how often it broke and its first examples — every one with -v —
// and a verdict naming the broken invariants and the --seed value.
func targetReplayText(w io.Writer, r *replay.Report, opts Options) error {
	p := newPainter(opts.Color)
	var b strings.Builder
	t := r.Target
	fmt.Fprintf(&b, "%s\n", p.dim.Sprint(escape.Line("target: "+t.Consumer+"; effects: "+t.Effects)))
	fmt.Fprintf(&b, "%s: %s\n", escape.Line(targetReplayName(t)), escape.Line(targetReplayLine(r)))
	var broken []string
	for _, v := range r.Violations {
		broken = append(broken, v.Invariant)
		fmt.Fprintf(&b, "invariant %s broken %s\n", v.Invariant, count(v.Count, "time", "times"))
		shown := v.Examples
		if !opts.Verbose && len(shown) > replayExamples {
			shown = shown[:replayExamples]
		}
		for _, x := range shown {
			fmt.Fprintf(&b, "  %s\n", escape.Line(breach(x)))
		}
		if more := v.Count - int64(len(shown)); more > 0 {
			fmt.Fprintf(&b, "  and %d more (every one with -v, in the JSON report, or in --findings FILE)\n", more)
		}
		for _, line := range patternGroups(v.Examples, opts.Verbose) {
			fmt.Fprintf(&b, "  %s\n", escape.Line(line))
		}
	}
	for _, f := range r.FailedOn {
		broken = append(broken, string(f))
		fmt.Fprintf(&b, "--fail-on %s: the capture holds %s\n", f, findingWords(f))
	}
	if r.Reproducer != "" {
		fmt.Fprintf(&b, "reproducer: %s (%s; run it with redeliver run %s)\n", escape.Input(r.Reproducer), count(int64(r.ReproducerSteps), "delivery", "deliveries"), escape.Input(r.Reproducer))
	}
	if len(t.Logs) > 0 {
		fmt.Fprintf(&b, "consumer output: %s\n", escape.Line(logFiles(t.Logs)))
	}
	if opts.Verbose {
		fmt.Fprintf(&b, "%s\n", p.dim.Sprint(targetCounterLine(r.Counters)))
	}
	if r.Passed() {
		fmt.Fprintf(&b, "%s %s\n", p.pass.Sprint("PASS:"), escape.Line(targetReplayName(t)))
	} else {
		fmt.Fprintf(&b, "%s %s (seed %d)\n", p.fail.Sprint("FAIL:"), strings.Join(broken, ", "), r.Seed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// targetReplayName names a replay into a target by the captures given;
// one that stopped first has neither name nor line.
func targetReplayName(t *replay.Target) string {
	if len(t.Given) == 0 {
		return ""
	}
	if len(t.Given) == 1 {
		return "replay of " + t.Given[0] + " into the target"
	}
	return fmt.Sprintf("replay of %d capture(s) into the target", len(t.Given))
}

// targetReplayLine is a replay into a target's line: its deliveries (or
// a broker's publishes), its crashes by when they came and the effect
// rows of the whole table, then the kills of --kill-every or
// --kill-working, the bad records skipped and the invariants caught.
func targetReplayLine(rep *replay.Report) string {
	t := rep.Target
	if len(t.Given) == 0 {
		return ""
	}
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

// TargetReplayDocument is the JSON report of a replay into a target: the
// built-in replay's document (docs/replay-json.md, the same schema) with
// the target and its effects in place of a strategy and a store, and
// without what only the built-in handler counts (the capture's findings,
// the handler's outcomes, the strategies compared); fail_on and failed_on
// only when --fail-on was given.
type TargetReplayDocument struct {
	Schema          int                     `json:"schema"`
	Tool            string                  `json:"tool"`
	Command         string                  `json:"command"`
	Inputs          []replay.Input          `json:"inputs"`
	Seed            int64                   `json:"seed"`
	Target          *replay.Target          `json:"target"`
	Injected        replay.Injected         `json:"injected"`
	Counters        consumer.Counters       `json:"counters"`
	Crashes         *CrashesDoc             `json:"crashes,omitempty"`
	Effects         int64                   `json:"effects"`
	Invariants      []replay.InvariantCheck `json:"invariants"`
	Violations      []replay.Violation      `json:"violations"`
	Reproducer      string                  `json:"reproducer,omitempty"`
	ReproducerSteps int                     `json:"reproducer_steps,omitempty"`
	FailOn          []replay.Finding        `json:"fail_on,omitempty"`
	FailedOn        *[]replay.Finding       `json:"failed_on,omitempty"` // with fail_on, even when empty
	Verdict         invariant.Verdict       `json:"verdict"`
	Duration        float64                 `json:"duration_seconds"`
	Errors          []ErrorDoc              `json:"errors"`
}

// targetReplayDocument is the JSON document of a replay into a target.
func targetReplayDocument(r *Replay) *TargetReplayDocument {
	rep := r.Report
	var failedOn *[]replay.Finding
	if len(rep.FailOn) > 0 {
		failedOn = &rep.FailedOn
	}
	return &TargetReplayDocument{Schema: SchemaVersion, Tool: "redeliver", Command: "replay",
		Inputs: rep.Inputs, Seed: rep.Seed, Target: rep.Target, Injected: rep.Injected,
		Counters: rep.Counters, Crashes: crashesDoc(rep.Counters), Effects: rep.Effects,
		Invariants: rep.Invariants, Violations: rep.Violations,
		Reproducer: rep.Reproducer, ReproducerSteps: rep.ReproducerSteps,
		FailOn: rep.FailOn, FailedOn: failedOn,
		Verdict: rep.Verdict, Duration: seconds(r.Duration), Errors: errorDocs(r.Errors)}
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
	return s
}

// targetFigures is the last line of a target replay's step summary.
func targetFigures(rep *replay.Report) string {
	t := rep.Target
	return fmt.Sprintf("target %s, effects %s, seed %d: %s", t.Consumer, t.Effects, rep.Seed, targetReplayLine(rep))
}

// ReplayCoverage is --coverage for a replay into a target: what the
// replay injected, from --seed, and when each kill came against the
// consumer's answer (before it: the kill interrupted a delivery), so a
// replay whose kills all came after the answer says it tested no crash
// mid-delivery. The built-in replay has no such section: its injected:
// line says what it injected.
func ReplayCoverage(w io.Writer, r *Replay) error {
	rep := r.Report
	if rep.Target == nil {
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
	if k := rep.Target.Working; k != nil {
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
