package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"

	"github.com/redeliver/redeliver/pkg/escape"
)

// ReplayText writes a replay's report, one section for each part of it
// the report holds: what took the deliveries (the built-in handler's
// strategy and store, or the consumer redeliver reached and its
// effects), the replay's line when it has one, what the capture holds
// when its ids were counted, the handler's account of what was injected,
// what it returned and its counters, a resume, the broken invariants with
// their first examples (every one with -v) and the pattern their kills
// show, the strategies compared, the failures no fault explains,
// --fail-on, the reproducer, the consumer's output files, a consumer's
// answers (with -v), and a verdict line. Where two replays print
// differently, it is because their reports hold different facts.
func ReplayText(w io.Writer, r *replay.Report, opts Options) error {
	p := newPainter(opts.Color)
	var b strings.Builder
	name, line := replayName(r), replayLine(r)
	if r.Strategy != "" {
		var ins []string
		for _, in := range r.Inputs {
			ins = append(ins, fmt.Sprintf("%s (%s)", escape.Input(in.File), in.Format))
		}
		fmt.Fprintf(&b, "replay: %s; strategy %s on %s; seed %d\n", strings.Join(ins, ", "), r.Strategy, escape.Line(r.Store), r.Seed)
	}
	if t := r.Target; t != nil {
		fmt.Fprintf(&b, "%s\n", p.dim.Sprint(escape.Line("target: "+t.Consumer+"; effects: "+t.Effects)))
	}
	if name != "" {
		fmt.Fprintf(&b, "%s: %s\n", escape.Line(name), escape.Line(line))
	}
	if c := r.Capture; c.Counted {
		captureText(&b, c)
	}
	courseText(&b, r)
	switch {
	case r.Resumed && r.NewEffects == 0:
		fmt.Fprintf(&b, "resume: the database already held %s; this replay added none\n", count(r.Effects, "effect", "effects"))
	case r.Resumed:
		fmt.Fprintf(&b, "resume: the database held %d effects; this replay added %d (%d now)\n", r.Effects-r.NewEffects, r.NewEffects, r.Effects)
	}
	// A replay's line says what it caught; without one, this does.
	if len(r.Violations) == 0 && line == "" {
		b.WriteString("invariants: all hold\n")
	}
	for _, v := range r.Violations {
		violationText(&b, v, opts.Verbose)
	}
	strategiesText(&b, r)
	if u := r.Unexpected; u != nil && u.Count > 0 {
		fmt.Fprintf(&b, "failures: %s without an injected fault\n", count(u.Count, "delivery failed", "deliveries failed"))
		for _, x := range u.Examples {
			fmt.Fprintf(&b, "  %s at %s: %s\n", x.Event, consumer.Location(x.At), x.Error)
		}
	}
	for _, f := range r.FailedOn {
		fmt.Fprintf(&b, "--fail-on %s: the capture holds %s\n", f, findingWords(f))
	}
	if r.Reproducer != "" {
		fmt.Fprintf(&b, "reproducer: %s (%s; run it with redeliver run %s)\n", escape.Input(r.Reproducer), count(int64(r.ReproducerSteps), "delivery", "deliveries"), escape.Input(r.Reproducer))
	}
	if t := r.Target; t != nil && len(t.Logs) > 0 {
		fmt.Fprintf(&b, "consumer output: %s\n", escape.Line(logFiles(t.Logs)))
	}
	if opts.Verbose && answers(r) {
		fmt.Fprintf(&b, "%s\n", p.dim.Sprint(targetCounterLine(r.Counters)))
	}
	verdictText(&b, p, r, name)
	_, err := io.WriteString(w, b.String())
	return err
}

// courseText is the handler's account of the replay's course: what it
// returned at its fault points. A consumer that answers has its course in
// the replay's line.
func courseText(b *strings.Builder, r *replay.Report) {
	o := r.Outcomes
	if o == nil {
		return
	}
	in, k := r.Injected, r.Counters
	fmt.Fprintf(b, "injected: %d redelivered after a crash before the ack, %d crashed mid-transaction and retried, %d rewound by %s, %d republished under a new id\n",
		in.Redelivered, in.Crashed, in.Rewound, count(in.Rebalances, "rebalance", "rebalances"), in.Republished)
	fmt.Fprintf(b, "outcomes: %d processed, %d duplicate, %d conflict, %d failed, %d crashed\n", o.Processed, o.Duplicate, o.Conflict, o.Failed, o.Crashed)
	fmt.Fprintf(b, "counters: %s, %s, %s, %s, %d failed, %d crashed, %s written\n",
		count(int64(k.Deliveries), "delivery", "deliveries"), count(int64(k.Redeliveries), "redelivery", "redeliveries"),
		count(int64(k.Duplicates), "skipped duplicate", "skipped duplicates"), count(int64(k.Conflicts), "identity conflict", "identity conflicts"),
		k.Failed, k.Crashed, count(int64(k.Effects), "effect", "effects"))
}

// verdictText is the replay's last line: PASS, or FAIL with what broke.
func verdictText(b *strings.Builder, p painter, r *replay.Report, name string) {
	switch {
	case r.Passed() && name != "":
		fmt.Fprintf(b, "%s %s\n", p.pass.Sprint("PASS:"), escape.Line(name))
	case r.Passed():
		fmt.Fprintf(b, "%s %s, %s, no invariant broken (seed %d)\n", p.pass.Sprint("PASS:"), count(int64(r.Counters.Deliveries), "delivery", "deliveries"), count(r.Effects, "effect", "effects"), r.Seed)
	default:
		var why []string
		for _, v := range r.Violations {
			why = append(why, v.Invariant)
		}
		for _, f := range r.FailedOn {
			why = append(why, string(f))
		}
		if u := r.Unexpected; u != nil && u.Count > 0 {
			why = append(why, count(u.Count, "delivery failed", "deliveries failed")+" without an injected fault")
		}
		fmt.Fprintf(b, "%s %s (seed %d)\n", p.fail.Sprint("FAIL:"), strings.Join(why, ", "), r.Seed)
	}
}

// captureText says what the capture holds: its deliveries, ids, repeats,
// reuses and keys under several ids, with their examples.
func captureText(b *strings.Builder, c replay.CaptureReport) {
	fmt.Fprintf(b, "capture: %s, %s, %s repeated, %s reused with a different payload, %s under several ids",
		count(c.Deliveries, "delivery", "deliveries"), count(c.DistinctIDs, "distinct id", "distinct ids"),
		count(c.RepeatedIDs, "id", "ids"), count(c.IdentityReuse, "id", "ids"), count(c.KeysWithSeveralIDs, "business key", "business keys"))
	if c.MarkedRedelivered > 0 {
		fmt.Fprintf(b, ", %d marked redelivered by the broker", c.MarkedRedelivered)
	}
	if c.BadRecords > 0 {
		fmt.Fprintf(b, ", %s skipped", count(c.BadRecords, "bad record", "bad records"))
	}
	b.WriteString("\n")
	for _, x := range c.ReuseExamples {
		fmt.Fprintf(b, "  id %s reused with a different payload at %s (first at %s)\n", escape.Input(x.ID), escape.Line(x.Then), escape.Line(x.First))
	}
	for _, k := range c.KeyExamples {
		fmt.Fprintf(b, "  business key %s under %d ids (%s), first at %s\n", escape.Input(k.Key), k.IDs, escape.Line(k.Some), escape.Line(k.First))
	}
}

// violationText writes a broken invariant: how often it broke, its first
// examples (every one the report holds with -v) each at the capture line
// of the delivery behind it, how many more the report holds, and the
// patterns their kills show.
func violationText(b *strings.Builder, v replay.Violation, verbose bool) {
	fmt.Fprintf(b, "invariant %s broken %s\n", v.Invariant, count(v.Count, "time", "times"))
	shown := v.Examples
	if !verbose && len(shown) > replayExamples {
		shown = shown[:replayExamples]
	}
	for _, x := range shown {
		fmt.Fprintf(b, "  %s\n", escape.Line(breach(x)))
	}
	if more := len(v.Examples) - len(shown); more > 0 {
		fmt.Fprintf(b, "  and %d more (every one with -v, in the JSON report, or in --findings FILE)\n", more)
	}
	for _, line := range patternGroups(v.Examples, verbose) {
		fmt.Fprintf(b, "  %s\n", escape.Line(line))
	}
}

// strategiesText writes how every strategy fares on the capture, or why
// they were not compared.
func strategiesText(b *strings.Builder, r *replay.Report) {
	if len(r.Strategies) == 0 {
		if r.NotCompared != "" {
			fmt.Fprintf(b, "strategies: not compared (%s)\n", r.NotCompared)
		}
		return
	}
	b.WriteString("strategies on this capture (the same seed and injections; a business key should get one effect):\n")
	fmt.Fprintf(b, "  %-28s %8s %8s %13s %10s  %s\n", "strategy", "effects", "keys", "most per key", "conflicts", "verdict")
	for _, s := range r.Strategies {
		verdict := "safe"
		if !s.Safe {
			why := append([]string{}, s.Broken...)
			if s.Unexpected > 0 {
				why = append(why, count(s.Unexpected, "unexpected failure", "unexpected failures"))
			}
			verdict = "unsafe: " + strings.Join(why, ", ")
		}
		name := string(s.Strategy)
		if s.Strategy == r.Strategy {
			name += " (this replay)"
		}
		fmt.Fprintf(b, "  %-28s %8d %8d %13d %10d  %s\n", name, s.Effects, s.Keys, s.MostPerKey, s.Conflicts, verdict)
	}
}

func findingWords(f replay.Finding) string {
	switch f {
	case replay.IdentityReuse:
		return "ids reused with a different payload"
	case replay.RepeatedIDs:
		return "repeated ids"
	case replay.KeysWithSeveralIDs:
		return "business keys under several ids"
	case replay.BadRecords:
		return "bad records"
	}
	return string(f)
}

func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ReplayDocument is the JSON report of a replay, as docs/replay-json.md
// describes it: the replay's own report, with the schema version, the
// command, the duration and the harness errors around it. One document
// serves every consumer: a part is there when the replay's report holds
// its facts — the target for a consumer redeliver reaches, the strategy,
// store, resume and strategies compared for the built-in handler's
// store, the capture's findings when its ids were counted, the outcomes
// when the consumer returned them, the crashes by answer when it
// answered instead, fail_on when the report lists what --fail-on asked.
type ReplayDocument struct {
	Schema          int                     `json:"schema"`
	Tool            string                  `json:"tool"`
	Command         string                  `json:"command"`
	Inputs          []replay.Input          `json:"inputs"`
	Seed            int64                   `json:"seed"`
	Target          *replay.Target          `json:"target,omitempty"`
	Strategy        handler.Strategy        `json:"strategy,omitempty"`
	Store           string                  `json:"store,omitempty"`
	Capture         *replay.CaptureReport   `json:"capture,omitempty"`
	Injected        replay.Injected         `json:"injected"`
	Outcomes        *replay.Outcomes        `json:"outcomes,omitempty"`
	Counters        consumer.Counters       `json:"counters"`
	Crashes         *CrashesDoc             `json:"crashes,omitempty"`
	Effects         int64                   `json:"effects"`
	NewEffects      *int64                  `json:"new_effects,omitempty"`
	Resumed         *bool                   `json:"resumed,omitempty"`
	Invariants      []replay.InvariantCheck `json:"invariants"`
	Violations      []replay.Violation      `json:"violations"`
	Unexpected      *replay.Unexpected      `json:"unexpected_failures,omitempty"`
	Strategies      *[]replay.StrategyRow   `json:"strategies,omitempty"`
	NotCompared     string                  `json:"not_compared,omitempty"`
	FailOn          *[]replay.Finding       `json:"fail_on,omitempty"`
	FailedOn        *[]replay.Finding       `json:"failed_on,omitempty"` // with fail_on, even when empty
	Reproducer      string                  `json:"reproducer,omitempty"`
	ReproducerSteps int                     `json:"reproducer_steps,omitempty"`
	Verdict         invariant.Verdict       `json:"verdict"`
	Duration        float64                 `json:"duration_seconds"`
	Errors          []ErrorDoc              `json:"errors"`
}

// replayDocument is the JSON document of a replay, each optional part
// from the facts the report holds (see ReplayDocument).
func replayDocument(r *Replay) *ReplayDocument {
	rep := r.Report
	d := &ReplayDocument{Schema: SchemaVersion, Tool: "redeliver", Command: "replay",
		Inputs: rep.Inputs, Seed: rep.Seed, Target: rep.Target, Strategy: rep.Strategy, Store: rep.Store,
		Injected: rep.Injected, Outcomes: rep.Outcomes, Counters: rep.Counters, Effects: rep.Effects,
		Invariants: rep.Invariants, Violations: rep.Violations, Unexpected: rep.Unexpected, NotCompared: rep.NotCompared,
		Reproducer: rep.Reproducer, ReproducerSteps: rep.ReproducerSteps,
		Verdict: rep.Verdict, Duration: seconds(r.Duration), Errors: errorDocs(r.Errors)}
	if rep.Capture.Counted {
		d.Capture = &rep.Capture
	}
	if answers(rep) {
		d.Crashes = crashesDoc(rep.Counters)
	}
	// A replay resumes the handler's store, whose strategy it compares
	// with the others; a consumer that keeps its own database has neither.
	if rep.Store != "" {
		d.NewEffects, d.Resumed = &rep.NewEffects, &rep.Resumed
	}
	if rep.Strategy != "" {
		d.Strategies = &rep.Strategies
	}
	if rep.FailOn != nil {
		d.FailOn, d.FailedOn = &rep.FailOn, &rep.FailedOn
	}
	return d
}

// answers reports whether the replay's consumer answered its deliveries
// (acked, rejected, left unanswered) rather than return the built-in
// handler's outcomes: its counters are its answers, and its crashes are
// timed against them.
func answers(rep *replay.Report) bool { return rep.Outcomes == nil }

// ReplayJSON writes a replay as one indented JSON document.
func ReplayJSON(w io.Writer, r *Replay) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(replayDocument(r))
}

// errorDocs are the harness errors as the JSON reports write them.
func errorDocs(errs []*problem.Error) []ErrorDoc {
	out := []ErrorDoc{}
	for _, e := range errs {
		out = append(out, ErrorDoc{Kind: string(e.Kind), Message: e.Msg, Location: locationOf(e.Pos)})
	}
	return out
}
