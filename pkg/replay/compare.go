package replay

import (
	"context"
	"fmt"
	"slices"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/ledger"
)

// StrategyRow is how one strategy fares on the capture: the question a user
// replays a log to answer is which way of writing the consumer would have
// been safe on it.
type StrategyRow struct {
	Strategy handler.Strategy `json:"strategy"`
	Effects  int64            `json:"effects"`
	// Keys are the distinct business keys the effects carry; MostPerKey the
	// most effects one key got, and KeysWithSeveral how many keys got more
	// than one.
	Keys            int64 `json:"keys"`
	MostPerKey      int64 `json:"most_effects_per_key"`
	KeysWithSeveral int64 `json:"keys_with_several_effects"`
	Conflicts       int64 `json:"conflicts"`
	// Unexpected counts deliveries that failed without an injected fault.
	Unexpected int64 `json:"unexpected_failures"`
	// Broken lists the invariants the strategy broke on this capture.
	Broken []string `json:"broken"`
	Safe   bool     `json:"safe"`
}

// compared are the strategies a replay compares: every one it can replay.
var compared = []handler.Strategy{handler.EventID, handler.ConsumerScoped, handler.BusinessKey, handler.None, handler.CheckThenAct, handler.MarkerAfterEffect}

// row is the replay's own strategy, read from its database.
func row(ctx context.Context, db ledger.Ledger, rep *Report) (StrategyRow, error) {
	r := StrategyRow{Strategy: rep.Strategy, Effects: rep.Effects, Conflicts: rep.Outcomes.Conflict, Unexpected: rep.Unexpected.Count, Broken: []string{}}
	var err error
	if r.Keys, r.MostPerKey, r.KeysWithSeveral, err = db.KeyStats(ctx); err != nil {
		return r, err
	}
	for _, v := range rep.Violations {
		r.Broken = append(r.Broken, v.Invariant)
	}
	r.Safe = len(r.Broken) == 0 && r.Unexpected == 0
	return r, nil
}

// compare replays the captures again, in memory, with every other strategy
// (same seed, same injections), and returns a row per strategy, the
// replay's own as it ran.
func compare(ctx context.Context, o Options, own StrategyRow) ([]StrategyRow, error) {
	out := []StrategyRow{own}
	for _, s := range compared {
		if s == o.Handler.Strategy {
			continue
		}
		c := o
		c.DB, c.Progress, c.Warn, c.EmitScenario, c.FailOn = ledger.Memory, nil, nil, "", nil
		c.Handler.Strategy = s
		if s.UsesKey() && c.Handler.Key.IsZero() {
			c.Handler.Key = businessKeyTemplate
		}
		r, err := replayOnly(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("compare strategy %s: %w", s, err)
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b StrategyRow) int {
		return slices.Index(compared, a.Strategy) - slices.Index(compared, b.Strategy)
	})
	return out, nil
}

// replayOnly replays into a fresh in-memory database without recording the
// capture, and reads back the row of the strategy.
func replayOnly(ctx context.Context, o Options) (StrategyRow, error) {
	o.DB = ledger.Memory
	db, err := openStore(ctx, o)
	if err != nil {
		return StrategyRow{}, err
	}
	defer db.Close()
	rep := newReport(o, false, 0)
	if err := replayInto(ctx, o, db, false, rep); err != nil {
		return StrategyRow{}, err
	}
	if rep.Effects, err = db.CountEffects(ctx); err != nil {
		return StrategyRow{}, err
	}
	broken, err := db.KeyedInvariants(ctx, o.Handler.Strategy, 1)
	if err != nil {
		return StrategyRow{}, err
	}
	rep.setViolations(broken)
	return row(ctx, db, rep)
}
