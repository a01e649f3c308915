package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"

	"github.com/redeliver/redeliver/pkg/escape"
)

// ReplayText writes a replay's report: the inputs and seed, what the
// capture holds, what was injected, the outcomes and counters, the broken
// invariants, and a verdict line.
func ReplayText(w io.Writer, r *replay.Report, opts Options) error {
	if r.Target != nil {
		return targetReplayText(w, r, opts)
	}
	p := newPainter(opts.Color)
	var b strings.Builder
	var ins []string
	for _, in := range r.Inputs {
		ins = append(ins, fmt.Sprintf("%s (%s)", escape.Input(in.File), in.Format))
	}
	fmt.Fprintf(&b, "replay: %s; strategy %s on %s; seed %d\n", strings.Join(ins, ", "), r.Strategy, escape.Line(r.Store), r.Seed)
	c := r.Capture
	fmt.Fprintf(&b, "capture: %s, %s, %s repeated, %s reused with a different payload, %s under several ids",
		count(c.Deliveries, "delivery", "deliveries"), count(c.DistinctIDs, "distinct id", "distinct ids"),
		count(c.RepeatedIDs, "id", "ids"), count(c.IdentityReuse, "id", "ids"), count(c.KeysWithSeveralIDs, "business key", "business keys"))
	if c.MarkedRedelivered > 0 {
		fmt.Fprintf(&b, ", %d marked redelivered by the broker", c.MarkedRedelivered)
	}
	if c.BadRecords > 0 {
		fmt.Fprintf(&b, ", %s skipped", count(c.BadRecords, "bad record", "bad records"))
	}
	b.WriteString("\n")
	for _, x := range c.ReuseExamples {
		fmt.Fprintf(&b, "  id %s reused with a different payload at %s (first at %s)\n", escape.Input(x.ID), escape.Line(x.Then), escape.Line(x.First))
	}
	for _, k := range c.KeyExamples {
		fmt.Fprintf(&b, "  business key %s under %d ids (%s), first at %s\n", escape.Input(k.Key), k.IDs, escape.Line(k.Some), escape.Line(k.First))
	}
	in := r.Injected
	fmt.Fprintf(&b, "injected: %d redelivered after a crash before the ack, %d crashed mid-transaction and retried, %d rewound by %s, %d republished under a new id\n",
		in.Redelivered, in.Crashed, in.Rewound, count(in.Rebalances, "rebalance", "rebalances"), in.Republished)
	o := r.Outcomes
	fmt.Fprintf(&b, "outcomes: %d processed, %d duplicate, %d conflict, %d failed, %d crashed\n", o.Processed, o.Duplicate, o.Conflict, o.Failed, o.Crashed)
	k := r.Counters
	fmt.Fprintf(&b, "counters: %s, %s, %s, %s, %d failed, %d crashed, %s written\n",
		count(int64(k.Deliveries), "delivery", "deliveries"), count(int64(k.Redeliveries), "redelivery", "redeliveries"),
		count(int64(k.Duplicates), "skipped duplicate", "skipped duplicates"), count(int64(k.Conflicts), "identity conflict", "identity conflicts"),
		k.Failed, k.Crashed, count(int64(k.Effects), "effect", "effects"))
	switch {
	case r.Resumed && r.NewEffects == 0:
		fmt.Fprintf(&b, "resume: the database already held %s; this replay added none\n", count(r.Effects, "effect", "effects"))
	case r.Resumed:
		fmt.Fprintf(&b, "resume: the database held %d effects; this replay added %d (%d now)\n", r.Effects-r.NewEffects, r.NewEffects, r.Effects)
	}
	if len(r.Violations) == 0 {
		b.WriteString("invariants: all hold\n")
	}
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "invariant %s broken %s\n", v.Invariant, count(v.Count, "time", "times"))
		for _, x := range v.Examples {
			fmt.Fprintf(&b, "  %s\n", escape.Line(x.Detail))
		}
	}
	if len(r.Strategies) > 0 {
		b.WriteString("strategies on this capture (the same seed and injections; a business key should get one effect):\n")
		fmt.Fprintf(&b, "  %-28s %8s %8s %13s %10s  %s\n", "strategy", "effects", "keys", "most per key", "conflicts", "verdict")
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
			fmt.Fprintf(&b, "  %-28s %8d %8d %13d %10d  %s\n", name, s.Effects, s.Keys, s.MostPerKey, s.Conflicts, verdict)
		}
	} else if r.NotCompared != "" {
		fmt.Fprintf(&b, "strategies: not compared (%s)\n", r.NotCompared)
	}
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
	if r.Passed() {
		fmt.Fprintf(&b, "%s %s, %s, no invariant broken (seed %d)\n", p.pass.Sprint("PASS:"), count(int64(k.Deliveries), "delivery", "deliveries"), count(r.Effects, "effect", "effects"), r.Seed)
	} else {
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
		fmt.Fprintf(&b, "%s %s (seed %d)\n", p.fail.Sprint("FAIL:"), strings.Join(why, ", "), r.Seed)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
// command, the duration and the harness errors around it.
type ReplayDocument struct {
	Schema  int    `json:"schema"`
	Tool    string `json:"tool"`
	Command string `json:"command"`
	*replay.Report
	Duration float64    `json:"duration_seconds"`
	Errors   []ErrorDoc `json:"errors"`
}

// ReplayJSON writes a replay as one indented JSON document.
// A replay into a target writes the same document, with the target in
// place of a strategy and a store (see TargetReplayDocument).
func ReplayJSON(w io.Writer, r *Replay) error {
	var d any = ReplayDocument{Schema: SchemaVersion, Tool: "redeliver", Command: "replay", Report: r.Report,
		Duration: seconds(r.Duration), Errors: errorDocs(r.Errors)}
	if r.Report.Target != nil {
		d = targetReplayDocument(r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}

// errorDocs are the harness errors as the JSON reports write them.
func errorDocs(errs []*problem.Error) []ErrorDoc {
	out := []ErrorDoc{}
	for _, e := range errs {
		out = append(out, ErrorDoc{Kind: string(e.Kind), Message: e.Msg, Location: locationOf(e.Pos)})
	}
	return out
}
