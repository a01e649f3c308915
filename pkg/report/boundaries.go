package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/report/words"

	"github.com/redeliver/redeliver/pkg/escape"
)

// Boundaries are what a run tested: results hold only within them. Every
// structured report carries them; the text report shows them with -v.
type Boundaries struct {
	Store      string   `json:"store"`
	Workers    int      `json:"workers"`
	Strategies []string `json:"strategies"`
	// Outcomes counts the deliveries that ended in each outcome.
	Outcomes map[string]int `json:"outcomes"`
	// FaultPoints lists every fault point, whether an injected failure
	// fired there, and the outcomes the deliveries it stopped ended in.
	FaultPoints []FaultPointReach `json:"fault_points"`
	// Held lists the fault points where racing workers were held
	// (interleave, or an explored race), in fault point order.
	Held []string `json:"held,omitempty"`
}

// FaultPointReach is one fault point and what the run did there.
type FaultPointReach struct {
	Point    string         `json:"point"`
	Reached  bool           `json:"reached"`
	Outcomes map[string]int `json:"outcomes"`
}

// CoverageCell is one cell of the strategy × fault point matrix: the checks
// whose injected failure fired at that point under that strategy, or whose
// concurrent workers were held there (interleave, or an explored race).
type CoverageCell struct {
	Strategy   string     `json:"strategy"`
	FaultPoint string     `json:"fault_point"`
	Checks     []CheckRef `json:"checks"`
}

// CheckRef names a check of a file.
type CheckRef struct {
	File  string `json:"file"`
	Check string `json:"check"`
	// Held: the check's workers were held at the point, and no injected
	// failure fired there.
	Held bool `json:"held,omitempty"`
}

// boundariesOf reads what was tested from the run's history: a fault point
// counts as reached only when a delivery's injected failure fired there,
// not when a step merely asked for it (a duplicate never reaches
// after-marker).
func boundariesOf(run *Run) Boundaries {
	b := Boundaries{Store: run.Store, Workers: run.Workers, Strategies: []string{}, Outcomes: map[string]int{}}
	if b.Workers < 1 {
		b.Workers = 1
	}
	if onlyTargets(run) {
		b.Store = StoreTarget
	}
	for _, o := range consumer.Outcomes {
		b.Outcomes[string(o)] = 0
	}
	fired := map[consumer.FaultPoint]map[string]int{}
	held := map[consumer.FaultPoint]bool{}
	for _, f := range run.Files {
		if !containsString(b.Strategies, string(f.Strategy)) {
			b.Strategies = append(b.Strategies, string(f.Strategy))
		}
		for _, c := range f.Checks {
			for _, p := range c.Held {
				held[p] = true
			}
			for rec := range invariant.Expand(c.History) {
				b.Outcomes[string(rec.Result.Outcome)]++
				if p, ok := firedAt(rec.Result); ok {
					if fired[p] == nil {
						fired[p] = map[string]int{}
					}
					fired[p][string(rec.Result.Outcome)]++
				}
			}
		}
	}
	for _, p := range consumer.FaultPoints {
		outcomes := fired[p]
		if outcomes == nil {
			outcomes = map[string]int{}
		}
		b.FaultPoints = append(b.FaultPoints, FaultPointReach{Point: string(p), Reached: len(fired[p]) > 0, Outcomes: outcomes})
		if held[p] {
			b.Held = append(b.Held, string(p))
		}
	}
	return b
}

// coverageOf builds the strategy × fault point matrix: every strategy the
// run used against every fault point it can reach, with the checks whose
// injected failure fired there or whose workers were held there.
func coverageOf(run *Run) []CoverageCell {
	var strategies []string
	cells := map[[2]string][]CheckRef{}
	for _, f := range run.Files {
		if f.Target != "" {
			// A consumer under test has none of the handler's fault points.
			continue
		}
		s := string(f.Strategy)
		if !containsString(strategies, s) {
			strategies = append(strategies, s)
		}
		for _, c := range f.Checks {
			seen := map[consumer.FaultPoint]bool{}
			for rec := range invariant.Expand(c.History) {
				p, ok := firedAt(rec.Result)
				if !ok || seen[p] {
					continue
				}
				seen[p] = true
				k := [2]string{s, string(p)}
				cells[k] = append(cells[k], CheckRef{File: f.File, Check: c.Name})
			}
			for _, p := range c.Held {
				if !seen[p] {
					seen[p] = true
					k := [2]string{s, string(p)}
					cells[k] = append(cells[k], CheckRef{File: f.File, Check: c.Name, Held: true})
				}
			}
		}
	}
	out := []CoverageCell{}
	for _, s := range strategies {
		for _, p := range consumer.FaultPoints {
			if !handler.Strategy(s).Reaches(p) {
				continue
			}
			checks := cells[[2]string{s, string(p)}]
			if checks == nil {
				checks = []CheckRef{}
			}
			out = append(out, CoverageCell{Strategy: s, FaultPoint: string(p), Checks: checks})
		}
	}
	return out
}

// storeWords names a store kind in the words of the text report.
func storeWords(kind string) string {
	switch kind {
	case StoreSQLiteMemory:
		return "SQLite in memory"
	case StoreSQLiteFile:
		return "SQLite file"
	case StorePostgres:
		return "PostgreSQL"
	case StoreTarget:
		return "the consumer's own database"
	}
	return kind
}

// boundaryLine is what -v adds to the text report: what was tested.
func boundaryLine(b Boundaries) string {
	var reached, missed []string
	for _, fp := range b.FaultPoints {
		if !fp.Reached {
			if containsString(b.Held, fp.Point) {
				reached = append(reached, fp.Point+" (held)")
			} else if reachable(b.Strategies, fp.Point) {
				missed = append(missed, fp.Point)
			}
			continue
		}
		var parts []string
		for _, o := range consumer.Outcomes {
			if n := fp.Outcomes[string(o)]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", o, n))
			}
		}
		reached = append(reached, fmt.Sprintf("%s (%s)", fp.Point, strings.Join(parts, ", ")))
	}
	if len(b.Strategies) == 0 {
		return "tested: nothing, no check ran"
	}
	s := fmt.Sprintf("tested: %s, %s, %s %s", storeWords(b.Store), countOf(b.Workers, "worker"), plural(len(b.Strategies), "strategy", "strategies"), strings.Join(b.Strategies, ", "))
	s += "; fault points reached: " + listOr(reached, "none")
	if len(missed) > 0 {
		s += "; not reached: " + strings.Join(missed, ", ")
	}
	return s
}

// Coverage writes the strategy × fault point matrix as text, so a team sees
// the failure modes its scenarios never touch; for target files, which
// checks' crashes interrupted a delivery.
func Coverage(w io.Writer, run *Run) error {
	var b strings.Builder
	handlerFiles := !onlyTargets(run)
	if handlerFiles {
		matrix(&b, run)
	}
	crashCoverage(&b, run)
	_, err := io.WriteString(w, b.String())
	return err
}

// crashCoverage is --coverage for the target files of a run: each check
// that crashed the consumer, with when its kills came against the answer,
// how many checks crashed only after the answer — they interrupted no
// delivery, whatever their names or say lines promise — and how many
// killed instances of a broker's consumer, where redeliver cannot tell
// whether a kill interrupted anything: it says "every check interrupted a
// delivery" only when it knows each did.
func crashCoverage(b *strings.Builder, run *Run) {
	several := len(run.Files) > 1
	var none, unknown []string
	var lines []string
	targets, crashing := false, 0
	for _, f := range run.Files {
		if f.Target == "" {
			continue
		}
		targets = true
		for _, c := range f.Checks {
			if c.Counters.Crashed == 0 {
				continue
			}
			crashing++
			name := c.Name
			if several {
				name = fmt.Sprintf("%s (%s)", c.Name, f.File)
			}
			before, _, _ := c.Counters.Interrupted()
			said := words.Crashes(c.Counters.Interrupted())
			switch {
			case c.Counters.InterruptedNone():
				said += ": interrupted no delivery"
				none = append(none, escape.Line(name))
			case before == 0:
				said += ": not known whether any interrupted a delivery"
				unknown = append(unknown, escape.Line(name))
			}
			lines = append(lines, fmt.Sprintf("  %s: %s\n", escape.Line(name), said))
		}
	}
	if !targets {
		return
	}
	if crashing == 0 {
		b.WriteString("crashes: no target check crashes the consumer\n")
		return
	}
	b.WriteString("crashes: target checks that kill the consumer, and when each kill came against its answer (before it: the kill interrupted a delivery)\n")
	for _, l := range lines {
		b.WriteString(l)
	}
	if len(none) == 0 && len(unknown) == 0 {
		fmt.Fprintf(b, "every check that crashes interrupted a delivery (%s)\n", countOf(crashing, "check"))
		return
	}
	verb := "crash"
	if crashing == 1 {
		verb = "crashes"
	}
	if len(none) > 0 {
		fmt.Fprintf(b, "%d of %s that %s interrupted no delivery: %s\n", len(none), countOf(crashing, "check"), verb, strings.Join(none, ", "))
	}
	if len(unknown) > 0 {
		fmt.Fprintf(b, "%d of %s that %s killed instances of a consumer that reads from a broker, and redeliver does not know whether those kills interrupted a delivery: %s\n", len(unknown), countOf(crashing, "check"), verb, strings.Join(unknown, ", "))
	}
}

// matrix writes the strategy × fault point matrix of the run's handler
// files.
func matrix(b *strings.Builder, run *Run) {
	b.WriteString("coverage: strategy × reachable fault point → checks whose injected failure fired there, or [held] racing workers there\n")
	several := len(run.Files) > 1
	width := 0
	for _, p := range consumer.FaultPoints {
		width = max(width, len(p))
	}
	strategy := ""
	// The matrix holds only the points a strategy can reach (none has no
	// after-check, only external-key an after-external), so a point is
	// missed only where one could have reached it.
	missed := map[string]bool{}
	for _, cell := range coverageOf(run) {
		if cell.Strategy != strategy {
			strategy = cell.Strategy
			fmt.Fprintf(b, "  %s\n", strategy)
		}
		if _, seen := missed[cell.FaultPoint]; !seen {
			missed[cell.FaultPoint] = true
		}
		names := []string{}
		for _, c := range cell.Checks {
			name := c.Check
			if several {
				name = fmt.Sprintf("%s (%s)", c.Check, c.File)
			}
			if c.Held {
				name += " [held]"
			}
			names = append(names, escape.Line(name))
		}
		if len(names) > 0 {
			missed[cell.FaultPoint] = false
		}
		fmt.Fprintf(b, "    %-*s  %s\n", width, cell.FaultPoint, listOr(names, "-"))
	}
	var never []string
	for _, p := range consumer.FaultPoints {
		if missed[string(p)] {
			never = append(never, string(p))
		}
	}
	if len(never) > 0 {
		fmt.Fprintf(b, "never reached: %s\n", strings.Join(never, ", "))
	} else {
		b.WriteString("every fault point reached\n")
	}
}

func listOr(xs []string, none string) string {
	if len(xs) == 0 {
		return none
	}
	return strings.Join(xs, ", ")
}

func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// reachable reports whether any of the strategies can reach the fault
// point: a point none of them reaches is not a gap in the scenarios.
func reachable(strategies []string, point string) bool {
	for _, s := range strategies {
		if handler.Strategy(s).Reaches(consumer.FaultPoint(point)) {
			return true
		}
	}
	return false
}
