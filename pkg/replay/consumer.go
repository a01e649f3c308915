package replay

import (
	"context"
	"fmt"
	"os"

	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/problem"
)

// Consumer is a consumer as a replay drives it: the built-in handler on
// its store (this package's builtinReplay, when Options.Consumer is nil), or
// the user's own consumer named by a --target file (pkg/external's
// ReplayTarget). The replay (Run) owns what is the same for both — the
// options and their check, the captures' check, the --findings file and
// the reproducer file — and a consumer owns how the captures are
// delivered and faulted, how what it did is judged into the report, what
// --findings lists, and what scenario reproduces a broken invariant.
//
// It is shaped like pkg/runner's System, which does the same for the
// checks of a scenario file: one orchestrator, one adapter per kind.
type Consumer interface {
	// Check refuses the options this consumer cannot replay with, in the
	// words of the flags, and fills in its defaults. It does no I/O.
	Check(o *Options) error
	// Replay delivers the captures of o with the faults drawn from
	// o.Seed, judges what the consumer did, and returns the report with
	// its verdict. A report with a failing verdict is not an error.
	Replay(ctx context.Context, o *Options) (*Report, error)
	// Findings lists, for --findings, every entry behind the report: each
	// value given to add is one JSON line.
	Findings(ctx context.Context, rep *Report, add func(v any) error) error
	// Reproduce is a scenario file that `redeliver run` fails the way the
	// replay failed, on its first broken invariant, and how many
	// deliveries it holds.
	Reproduce(ctx context.Context, o *Options, rep *Report) ([]byte, int, error)
	// Unfinished is the report of a replay that stopped before it had
	// one: what it was asked to do, nothing counted, verdict error.
	Unfinished(o *Options) *Report
	// Close lets go of what Replay kept open for Findings and Reproduce.
	Close() error
}

// consumer is the consumer the options deliver to.
func (o *Options) consumer() Consumer {
	if o.Consumer != nil {
		return o.Consumer
	}
	return &builtinReplay{}
}

// writeFindings writes the --findings file: every entry c lists behind
// rep, one JSON object a line. The file appears whole or not at all.
func writeFindings(ctx context.Context, o *Options, c Consumer, rep *Report) error {
	err := ledger.WriteFindings(o.FindingsFile, func(add func(v any) error) error {
		return c.Findings(ctx, rep, add)
	})
	if err != nil {
		return problem.Environmentf(problem.Pos{File: o.FindingsFile}, err)
	}
	return nil
}

// writeReproducer writes the scenario c makes of rep's first broken
// invariant to --emit-scenario, and names it in the report.
func writeReproducer(ctx context.Context, o *Options, c Consumer, rep *Report) error {
	src, n, err := c.Reproduce(ctx, o, rep)
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.EmitScenario, src, 0o644); err != nil {
		return fmt.Errorf("write the reproducer: %w", err)
	}
	rep.Reproducer, rep.ReproducerSteps = o.EmitScenario, n
	return nil
}
