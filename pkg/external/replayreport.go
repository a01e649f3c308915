package external

import (
	"time"

	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/runner"
)

// ReplayResult is a replay into a target: its one check, as a scenario
// file's (every breach, for --findings), and its report in the built-in
// replay's shape, which every report format renders.
type ReplayResult struct {
	File   *runner.FileResult
	Report *replay.Report
}

// report is the replay's report in the built-in replay's shape: the
// captures and the --seed, the target and its effects instead of a
// strategy and a store, what was injected, the counters, the effect rows,
// each target invariant with how often it broke, and every breach as an
// example at the capture line of the delivery behind it.
func (r *replayer) report(f *runner.FileResult) *replay.Report {
	c := f.Checks[0]
	rep := &replay.Report{
		Inputs: append([]replay.Input{}, r.eng.Opened...), Seed: r.o.Seed,
		Capture:  replay.CaptureReport{BadRecords: int64(r.eng.Bad.Count())},
		Injected: r.injected, Counters: c.Counters, Effects: int64(c.Counters.Effects),
		Invariants: []replay.InvariantCheck{}, Violations: []replay.Violation{},
		Target:  &replay.Target{File: f.File, Consumer: f.Target, Effects: f.Effects, Name: c.Name, Line: c.Line},
		Verdict: invariant.Pass,
	}
	rep.Injected.Rebalances, rep.Injected.Rewound = r.eng.Rebalances, r.eng.Rewound
	at := map[invariant.Name]int{}
	for _, v := range c.Violations {
		i, ok := at[v.Invariant]
		if !ok {
			i = len(rep.Violations)
			at[v.Invariant] = i
			rep.Violations = append(rep.Violations, replay.Violation{Invariant: string(v.Invariant), Examples: []replay.Example{}})
		}
		x := replay.Example{Event: v.EventID, Detail: v.Detail, At: []replay.Place{}}
		if v.By != nil {
			x.Key = v.By.Key
			if v.By.Pos.File != "" {
				x.At = append(x.At, replay.Place(v.By.Pos))
			}
		}
		x.Pattern = r.traces.pattern(f, v)
		rep.Violations[i].Count++
		rep.Violations[i].Examples = append(rep.Violations[i].Examples, x)
	}
	for _, inv := range f.Invariants {
		ic := replay.InvariantCheck{Name: string(inv.Name), Description: inv.Meaning}
		if i, ok := at[inv.Name]; ok {
			ic.Broken = rep.Violations[i].Count
		}
		rep.Invariants = append(rep.Invariants, ic)
	}
	if !c.Passed {
		rep.Verdict = invariant.Fail
	}
	if len(r.o.FailOn) > 0 {
		rep.FailOn, rep.FailedOn = append([]replay.Finding{}, r.o.FailOn...), []replay.Finding{}
		rep.FailOnFindings(r.o.FailOn)
	}
	rep.Over = r.over
	if k := r.working; k != nil {
		rep.Target.Working = &replay.WorkingKills{Probability: k.P, Drawn: k.Drawn, Killed: k.Killed, Interrupted: k.Interrupted, Missed: k.Missed, Untied: k.Untied, Line: k.String()}
	}
	if p := r.pace; p != nil {
		sec := func(d time.Duration) float64 { return float64(d.Round(time.Millisecond)) / float64(time.Second) }
		rep.Target.Kills = &replay.Kills{Count: p.Kills, AskedSeconds: sec(p.Asked), EverySeconds: sec(p.Every), RestartSeconds: sec(p.Restart)}
	}
	return rep
}

// outcomeIndex is where an answer counts among a replay's outcomes over
// its course: acked, conflict, neither.
func outcomeIndex(k Kind) int {
	switch k {
	case Acked:
		return 0
	case Conflict:
		return 1
	}
	return 2
}
