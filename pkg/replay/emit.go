package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/tidwall/gjson"

	"github.com/redeliver/redeliver/pkg/escape"
)

// The reproducer: the deliveries of the event behind the first broken
// invariant, collected by replaying the capture again (same seed, so the
// same injections) into a fresh in-memory database, then shrunk — chunks
// dropped while the rest still breaks the invariant — and written as a
// version-1 scenario that `redeliver run` fails on.

const (
	maxCollected = 2000 // deliveries kept for shrinking
	maxTrials    = 600  // scenario runs spent shrinking
)

// emit is the reproducer of the first broken invariant, and how many
// deliveries it holds.
func emit(ctx context.Context, o Options, broken []ledger.Broken) ([]byte, int, error) {
	target := broken[0]
	events := map[string]bool{}
	keys := map[string]bool{}
	for i, x := range target.Examples {
		if i == 1 {
			break // one event is enough to reproduce
		}
		if x.EventID != "" {
			events[x.EventID] = true
		}
		if i < len(target.Keys) {
			keys[target.Keys[i]] = true
		}
	}
	var steps []step
	matches := func(s step) bool {
		id := s.d.EventID
		if i := strings.Index(id, "~republish-"); i >= 0 {
			id = id[:i]
		}
		return events[id] || (s.res.Key != "" && keys[s.res.Key])
	}
	collect := o
	collect.DB, collect.Progress, collect.Warn = ledger.Memory, nil, nil
	db, err := o.Open(ctx, ledger.Memory, collect.Handler)
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	err = replayOne(ctx, collect, db, false, newReport(collect, false, 0), func(s step) {
		if len(steps) < maxCollected && matches(s) {
			steps = append(steps, s)
		}
	})
	if err != nil {
		return nil, 0, fmt.Errorf("collect the reproducer: %w", err)
	}
	if len(steps) == 0 {
		return nil, 0, fmt.Errorf("no deliveries of the broken event were found again to write a reproducer")
	}
	want, fails := invariantOf(ctx, o, steps, "")
	if fails {
		steps = shrink(ctx, o, steps, want)
	} else {
		want = target.Invariant
	}
	return scenarioYAML(o, steps, want), len(steps), nil
}

// invariantOf runs steps as a scenario and reports whether it breaks want
// (or, with want empty, which invariant it breaks first).
func invariantOf(ctx context.Context, o Options, steps []step, want invariant.Name) (invariant.Name, bool) {
	sc, err := scenario.Load("reproducer.yaml", scenarioYAML(o, steps, want))
	if err != nil {
		return "", false
	}
	fr, err := builtin.RunFile(ctx, sc, func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		return o.OpenScenario(ctx, s)
	})
	if err != nil || fr.Passed() {
		return "", false
	}
	for _, c := range fr.Checks {
		for _, v := range c.Violations {
			if want == "" || v.Invariant == want {
				return v.Invariant, true
			}
		}
	}
	return "", false
}

// shrink drops chunks of steps, halving the chunk size when none can go,
// as long as what is left still breaks the invariant.
func shrink(ctx context.Context, o Options, steps []step, want invariant.Name) []step {
	trials := 0
	n := 2
	for len(steps) >= 2 && trials < maxTrials {
		if n > len(steps) {
			n = len(steps)
		}
		size := (len(steps) + n - 1) / n
		dropped := false
		for start := 0; start < len(steps) && trials < maxTrials; start += size {
			end := min(start+size, len(steps))
			cand := append(append([]step{}, steps[:start]...), steps[end:]...)
			trials++
			if _, ok := invariantOf(ctx, o, cand, want); ok {
				steps, dropped = cand, true
				n = max(n-1, 2)
				break
			}
		}
		if !dropped {
			if n >= len(steps) {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	return steps
}

// scenarioYAML writes steps as a version-1 scenario file.
func scenarioYAML(o Options, steps []step, inv invariant.Name) []byte {
	var b bytes.Buffer
	what := "break an invariant"
	if inv != "" {
		what = "break invariant " + string(inv)
	}
	// Comments hold file names, which may hold anything: escaped, so that
	// none can end the comment and write YAML of its own.
	fmt.Fprintf(&b, "# A reproducer written by redeliver replay --seed %d from %s:\n", o.Seed, escape.Line(describeInputs(o.Inputs)))
	fmt.Fprintf(&b, "# %d %s that still %s. Run it with: redeliver run %s\n", len(steps), plural(len(steps), "delivery", "deliveries"), what, escape.Input(o.EmitScenario))
	b.WriteString("version: 1\nname: replay reproducer\nhandler:\n")
	fmt.Fprintf(&b, "  strategy: %s\n  consumer: %s\n  effect: %s\n", o.Handler.Strategy, quote(o.Handler.Consumer), o.Handler.Effect)
	// Every strategy records the key the capture gave, and is held to one
	// effect per key: the reproducer carries it whenever there is one.
	keyed := o.Handler.Strategy.UsesKey()
	for _, s := range steps {
		keyed = keyed || s.res.Key != ""
	}
	if keyed {
		// The business key travels as the event's subject.
		b.WriteString("  key: \"{subject}\"\n")
	}
	if len(o.Handler.Identity) > 0 {
		var paths []string
		for _, p := range o.Handler.Identity {
			paths = append(paths, quote(p))
		}
		fmt.Fprintf(&b, "  identity: [%s]\n", strings.Join(paths, ", "))
	}
	b.WriteString("checks:\n")
	fmt.Fprintf(&b, "  - name: %s\n    steps:\n", quote("replayed deliveries "+what))
	for _, s := range steps {
		data := gjson.GetBytes(s.d.Envelope, "data").Raw
		var c bytes.Buffer
		if data == "" || json.Compact(&c, []byte(data)) != nil {
			c.Reset()
			c.WriteString("null")
		}
		fmt.Fprintf(&b, "      - deliver: {id: %s", quote(s.d.EventID))
		if keyed {
			fmt.Fprintf(&b, ", subject: %s", quote(s.res.Key))
		}
		fmt.Fprintf(&b, ", data: %s}", c.String())
		if at := s.d.At.String(); at != "" {
			fmt.Fprintf(&b, " # %s%s", escape.Line(at), kindNote(s.kind))
		}
		b.WriteByte('\n')
		if s.fault != "" {
			fmt.Fprintf(&b, "        fail: %s\n", s.fault)
		}
	}
	return b.Bytes()
}

func kindNote(k kind) string {
	switch k {
	case redelivery:
		return ", redelivered after a crash before the ack"
	case retry:
		return ", retried after a crash mid-transaction"
	case rewound:
		return ", re-delivered by a rebalance"
	case republished:
		return ", republished under a new id"
	}
	return ""
}

// quote writes a YAML double-quoted scalar: YAML reads every escape Quote
// writes, and no line break or control character is left raw in it.
func quote(s string) string { return escape.Quote(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
