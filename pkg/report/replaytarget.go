package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// replayExamples is how many breaches of one invariant a target replay's
// text report shows without -v, as the built-in replay shows its examples.
const replayExamples = 5

// isTargetReplay reports whether the run is a replay into a target: one
// file, one check, judged over the consumer's effect table.
func isTargetReplay(run *Run) bool {
	return run.Command == "replay" && onlyTargets(run)
}

// targetReplayText writes a replay into a target the way the built-in
// replay's report reads: the target, the replay's line (its deliveries,
// crashes and effect rows, on a FAIL too), then each broken invariant
// with how often it broke and its first examples — every one with -v —
// and a verdict naming the broken invariants and the --seed value.
func targetReplayText(w io.Writer, run *Run, opts Options) error {
	p := newPainter(opts.Color)
	var b strings.Builder
	f := run.Files[0]
	fmt.Fprintf(&b, "%s\n", p.dim.Sprint(escape.Line("target: "+f.Target+"; effects: "+f.Effects)))
	var broken []string
	for _, c := range f.Checks {
		fmt.Fprintf(&b, "%s: %s\n", escape.Line(c.Name), escape.Line(c.Line))
		for _, g := range byInvariant(c.Violations) {
			broken = append(broken, string(g.name))
			fmt.Fprintf(&b, "invariant %s broken %s\n", g.name, count(int64(len(g.breaches)), "time", "times"))
			shown := g.breaches
			if !opts.Verbose && len(shown) > replayExamples {
				shown = shown[:replayExamples]
			}
			for _, v := range shown {
				fmt.Fprintf(&b, "  %s\n", escape.Line(breach(v)))
			}
			if more := len(g.breaches) - len(shown); more > 0 {
				fmt.Fprintf(&b, "  and %d more (every one with -v, in the JSON report, or in --findings FILE)\n", more)
			}
		}
		// A failure that is no broken invariant (none today) still shows.
		for _, fl := range c.Failures {
			if fl.Invariant == "" {
				fmt.Fprintf(&b, "%s\n", locatedLines(fl))
			}
		}
	}
	if opts.Verbose {
		fmt.Fprintf(&b, "%s\n", p.dim.Sprint(counterLine(f)))
	}
	switch {
	case f.Passed():
		fmt.Fprintf(&b, "%s %s\n", p.pass.Sprint("PASS:"), escape.Line(f.Checks[0].Name))
	case len(broken) > 0:
		fmt.Fprintf(&b, "%s %s (seed %d)\n", p.fail.Sprint("FAIL:"), strings.Join(broken, ", "), run.Seed)
	default:
		fmt.Fprintf(&b, "%s %s (seed %d)\n", p.fail.Sprint("FAIL:"), escape.Line(f.Checks[0].Name), run.Seed)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// breaches are one invariant's violations, in the order they were judged.
type breaches struct {
	name     invariant.Name
	breaches []invariant.Violation
}

// byInvariant groups violations by invariant, in the order each first
// appears.
func byInvariant(vs []invariant.Violation) []breaches {
	var out []breaches
	at := map[invariant.Name]int{}
	for _, v := range vs {
		i, ok := at[v.Invariant]
		if !ok {
			i = len(out)
			at[v.Invariant] = i
			out = append(out, breaches{name: v.Invariant})
		}
		out[i].breaches = append(out[i].breaches, v)
	}
	return out
}

// breach is one violation as an example line: its detail and the capture
// line of the delivery behind it.
func breach(v invariant.Violation) string {
	if v.By != nil && v.By.Pos.File != "" {
		return fmt.Sprintf("%s (%s)", v.Detail, v.By.Pos)
	}
	return v.Detail
}

// targetReplayAnnotations are a replay into a target's ::error commands:
// one per broken invariant, at the capture line of its first breach, with
// how often it broke — as the built-in replay annotates.
func targetReplayAnnotations(run *Run) string {
	var b strings.Builder
	f := run.Files[0]
	for _, c := range f.Checks {
		for _, g := range byInvariant(c.Violations) {
			first := g.breaches[0]
			at := consumer.Location{File: f.File}
			if first.By != nil && first.By.Pos.File != "" {
				at = first.By.Pos
			}
			msg := fmt.Sprintf("broken %s: %s", count(int64(len(g.breaches)), "time", "times"), breach(first))
			b.WriteString(errorCommand(at, "redeliver replay: invariant "+string(g.name), msg) + "\n")
		}
		for _, fl := range c.Failures {
			if fl.Invariant == "" {
				b.WriteString(errorCommand(consumer.Location{File: f.File}, "redeliver replay: "+c.Name, fl.Message) + "\n")
			}
		}
	}
	return b.String()
}
