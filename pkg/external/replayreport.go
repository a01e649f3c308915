package external

import (
	"time"

	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
)

// judged fills in the replay's report once its breaches are judged (the
// target's dialect and effect table diagnose their kills): the captures
// and what was injected, the effect rows, each target invariant with how
// often it broke, every breach as an example at the capture line of the
// delivery behind it, the verdict and --fail-on, and the kills.
func (r *replayer) judged(dialect, table string) {
	rep := r.rep
	rep.Inputs = append([]replay.Input{}, r.eng.Opened...)
	rep.Capture = replay.CaptureReport{BadRecords: int64(r.eng.Bad.Count())}
	rep.Injected = r.injected
	rep.Injected.Rebalances, rep.Injected.Rewound = r.eng.Rebalances, r.eng.Rewound
	rep.Effects = int64(rep.Counters.Effects)
	at := map[invariant.Name]int{}
	for _, v := range rep.Breaches {
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
		x.Pattern = r.traces.pattern(dialect, table, v)
		rep.Violations[i].Count++
		rep.Violations[i].Examples = append(rep.Violations[i].Examples, x)
	}
	for _, inv := range Invariants {
		ic := replay.InvariantCheck{Name: string(inv.Name), Description: inv.Meaning}
		if i, ok := at[inv.Name]; ok {
			ic.Broken = rep.Violations[i].Count
		}
		rep.Invariants = append(rep.Invariants, ic)
	}
	if len(rep.Breaches) > 0 {
		rep.Verdict = invariant.Fail
	}
	if len(r.o.FailOn) > 0 {
		rep.FailOn, rep.FailedOn = append([]replay.Finding{}, r.o.FailOn...), []replay.Finding{}
		rep.FailOnFindings(r.o.FailOn)
	}
	rep.Over = r.over
	if k := r.working; k != nil {
		rep.Target.Working = &replay.WorkingKills{Probability: k.P, Drawn: k.Drawn, Killed: k.Killed, Interrupted: k.Interrupted, Missed: k.Missed, Untied: k.Untied}
	}
	if p := r.pace; p != nil {
		sec := func(d time.Duration) float64 { return float64(d.Round(time.Millisecond)) / float64(time.Second) }
		rep.Target.Kills = &replay.Kills{Count: p.Kills, AskedSeconds: sec(p.Asked), EverySeconds: sec(p.Every), RestartSeconds: sec(p.Restart),
			Asked: p.Asked, Every: p.Every, Restart: p.Restart}
	}
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
