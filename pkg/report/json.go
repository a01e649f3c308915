package report

import (
	"encoding/json"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"io"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
)

// SchemaVersion is the version of the JSON report's shape. It changes only
// when a field is removed or changes meaning; new fields keep it.
const SchemaVersion = 1

// Document is the JSON report, as docs/report-json.md describes it.
type Document struct {
	Schema     int               `json:"schema"`
	Tool       string            `json:"tool"`
	Command    string            `json:"command"`
	Verdict    invariant.Verdict `json:"verdict"`
	Seed       int64             `json:"seed"`
	Duration   float64           `json:"duration_seconds"`
	Summary    Summary           `json:"summary"`
	Counters   consumer.Counters `json:"counters"`
	Boundaries Boundaries        `json:"boundaries"`
	Coverage   []CoverageCell    `json:"coverage"`
	Invariants []InvariantTally  `json:"invariants"`
	Files      []FileDoc         `json:"files"`
	Errors     []ErrorDoc        `json:"errors"`
}

// Summary counts the run's files and checks.
type Summary struct {
	Files  int `json:"files"`
	Checks int `json:"checks"`
	Passed int `json:"passed"`
	Failed int `json:"failed"`
	Errors int `json:"errors"`
}

// InvariantTally is one invariant and how many times the run broke it.
type InvariantTally struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Broken      int    `json:"broken"`
}

// FileDoc is one scenario file's results.
type FileDoc struct {
	File     string `json:"file"`
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	// Target and Effects name the consumer and database a target-mode
	// file tested.
	Target   string            `json:"target,omitempty"`
	Effects  string            `json:"effects,omitempty"`
	Passed   bool              `json:"passed"`
	Duration float64           `json:"duration_seconds"`
	Counters consumer.Counters `json:"counters"`
	Checks   []CheckDoc        `json:"checks"`
}

// CheckDoc is one check's result.
type CheckDoc struct {
	Name     string    `json:"name"`
	Location *Location `json:"location"`
	Passed   bool      `json:"passed"`
	Line     string    `json:"line"`
	// Schedules is how many schedules an explored check (a concurrent
	// step without interleave) was run under; absent for other checks.
	Schedules  int               `json:"schedules,omitempty"`
	Duration   float64           `json:"duration_seconds"`
	Counters   consumer.Counters `json:"counters"`
	Declared   []string          `json:"declared_violations"`
	Failures   []FailureDoc      `json:"failures"`
	Violations []ViolationDoc    `json:"violations"`
	// Reconciliation lists gateway mismatches when the check ended.
	Reconciliation []string `json:"reconciliation"`
	// Crashes sorts a target check's kills by when each came against the
	// consumer's answer; absent for a check that crashed nothing.
	Crashes    *CrashesDoc   `json:"crashes,omitempty"`
	Deliveries []DeliveryDoc `json:"deliveries"`
	// Statements are the SQL statements of the delivery a statement fault
	// landed in, whole, with their answers; absent for other checks.
	Statements []StatementDoc `json:"statements,omitempty"`
	// Diagnosis is why a target's failing check failed, as far as what
	// it recorded shows; absent for a check that passed or recorded
	// nothing to read.
	Diagnosis *DiagnosisDoc `json:"diagnosis,omitempty"`
}

// DiagnosisDoc is a failing check's diagnosis (pkg/diagnose): the
// pattern, the numbers of the statements (1-based, as in statements)
// and of the calls at an external it rests on, the evidence in words
// and the fix. A pattern of not-recognised carries nothing else.
type DiagnosisDoc struct {
	Pattern  string `json:"pattern"`
	Evidence []int  `json:"evidence"`
	External string `json:"external,omitempty"`
	Calls    []int  `json:"calls,omitempty"`
	Why      string `json:"why,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

// diagnosisDoc is d for the JSON report, or nil.
func diagnosisDoc(d *diagnose.Diagnosis) *DiagnosisDoc {
	if d == nil {
		return nil
	}
	return &DiagnosisDoc{Pattern: string(d.Pattern), Evidence: append([]int{}, d.Evidence...), External: d.External, Calls: d.Calls, Why: d.Why, Fix: d.Fix}
}

// CrashesDoc is a target check's kills: before the consumer's answer
// (each interrupted a delivery), after it (none did), and a broker
// instance's, which redeliver cannot place.
type CrashesDoc struct {
	BeforeAnswer int `json:"before_answer"`
	AfterAnswer  int `json:"after_answer"`
	Unknown      int `json:"unknown"`
}

// crashesDoc is a target check's crashes, or nil when it had none.
func crashesDoc(c consumer.Counters) *CrashesDoc {
	if c.Crashed == 0 {
		return nil
	}
	before, after, unknown := c.Interrupted()
	return &CrashesDoc{BeforeAnswer: before, AfterAnswer: after, Unknown: unknown}
}

// FailureDoc is one way a check did not hold.
type FailureDoc struct {
	Step      int       `json:"step"`
	Message   string    `json:"message"`
	Expected  string    `json:"expected"`
	Got       string    `json:"got"`
	Invariant string    `json:"invariant,omitempty"`
	Location  *Location `json:"location"`
}

// ViolationDoc is one broken invariant.
type ViolationDoc struct {
	Invariant string    `json:"invariant"`
	EventID   string    `json:"event_id"`
	Consumer  string    `json:"consumer"`
	External  string    `json:"external,omitempty"`
	Detail    string    `json:"detail"`
	Step      int       `json:"step,omitempty"`
	Location  *Location `json:"location"`
}

// DeliveryDoc is one delivery of the history and what came back.
type DeliveryDoc struct {
	Seq         int       `json:"seq"`
	Step        int       `json:"step"`
	EventID     string    `json:"event_id"`
	Consumer    string    `json:"consumer"`
	Key         string    `json:"key,omitempty"`
	Outcome     string    `json:"outcome"`
	EffectID    int64     `json:"effect_id,omitempty"`
	DuplicateOf string    `json:"duplicate_of,omitempty"`
	Fault       string    `json:"fault,omitempty"` // the fault point whose injected failure fired
	Error       string    `json:"error,omitempty"`
	Location    *Location `json:"location"`
}

// ErrorDoc is a harness error.
type ErrorDoc struct {
	Kind     string    `json:"kind"`
	Message  string    `json:"message"`
	Location *Location `json:"location"`
}

// NewDocument builds the JSON report of a run.
func NewDocument(run *Run) *Document {
	d := &Document{
		Schema: SchemaVersion, Tool: "redeliver", Command: run.Command, Verdict: run.Verdict(),
		Seed: run.Seed, Duration: seconds(run.Duration),
		Boundaries: boundariesOf(run), Coverage: coverageOf(run),
		Files: []FileDoc{}, Errors: []ErrorDoc{},
	}
	broken := map[invariant.Name]int{}
	for _, f := range run.Files {
		fd := FileDoc{File: f.File, Name: f.Name, Strategy: string(f.Strategy), Target: f.Target, Effects: f.Effects, Passed: f.Passed(), Duration: seconds(fileDuration(f)), Counters: f.Counters, Checks: []CheckDoc{}}
		for _, c := range f.Checks {
			cd := checkDoc(c)
			if f.Target != "" {
				cd.Crashes = crashesDoc(c.Counters)
				cd.Diagnosis = diagnosisDoc(diagnosisOf(f, &c))
			}
			fd.Checks = append(fd.Checks, cd)
			for _, v := range c.Violations {
				broken[v.Invariant]++
			}
			d.Summary.Checks++
			if c.Passed {
				d.Summary.Passed++
			} else {
				d.Summary.Failed++
			}
		}
		d.Counters.Add(f.Counters)
		d.Files = append(d.Files, fd)
	}
	for _, inv := range judgedBy(run) {
		d.Invariants = append(d.Invariants, InvariantTally{Name: string(inv.Name), Description: inv.Meaning, Broken: broken[inv.Name]})
	}
	for _, e := range run.Errors {
		d.Errors = append(d.Errors, ErrorDoc{Kind: string(e.Kind), Message: e.Msg, Location: locationOf(e.Pos)})
	}
	d.Summary.Files = len(run.Files)
	d.Summary.Errors = len(run.Errors)
	return d
}

// judgedBy lists the invariants the run's files were judged by, in
// catalogue order: a target's only its own, the built-in handler's every
// one it can break (invariant.BuiltIn).
func judgedBy(run *Run) []*invariant.Invariant {
	if len(run.Files) == 0 {
		return invariant.BuiltIn()
	}
	some := map[invariant.Name]bool{}
	for _, f := range run.Files {
		judged := f.Invariants
		if judged == nil {
			judged = invariant.BuiltIn()
		}
		for _, inv := range judged {
			some[inv.Name] = true
		}
	}
	var out []*invariant.Invariant
	for _, inv := range invariant.All {
		if some[inv.Name] {
			out = append(out, inv)
		}
	}
	return out
}

func checkDoc(c runner.CheckResult) CheckDoc {
	cd := CheckDoc{
		Name: c.Name, Location: locationOf(c.Pos), Passed: c.Passed, Line: CheckLine(c.Line), Schedules: c.Schedules,
		Duration: seconds(c.Duration), Counters: c.Counters, Declared: c.Declared,
		Failures: []FailureDoc{}, Violations: []ViolationDoc{}, Deliveries: []DeliveryDoc{},
		Reconciliation: append([]string{}, c.Reconciliation...),
		Statements:     statementDocs(shownTrace(&c)),
	}
	if cd.Declared == nil {
		cd.Declared = []string{}
	}
	for _, f := range c.Failures {
		expected, got := ExpectedGot(f)
		cd.Failures = append(cd.Failures, FailureDoc{Step: f.Step, Message: FailureMessage(f), Expected: expected, Got: got, Invariant: string(f.Invariant), Location: locationOf(f.Pos)})
	}
	for _, v := range c.Violations {
		vd := ViolationDoc{Invariant: string(v.Invariant), EventID: v.EventID, Consumer: v.Consumer, External: v.External, Detail: v.Detail}
		if v.By != nil {
			vd.Step, vd.Location = v.By.Step, locationOf(v.By.Pos)
		}
		cd.Violations = append(cd.Violations, vd)
	}
	for rec := range invariant.Expand(c.History) {
		dd := DeliveryDoc{Seq: rec.Seq, Step: rec.Step, EventID: rec.EventID, Consumer: rec.Consumer, Key: rec.Key,
			Outcome: string(rec.Result.Outcome), EffectID: rec.Result.EffectID, DuplicateOf: rec.Result.DuplicateOf, Location: locationOf(rec.Pos)}
		if p, ok := firedAt(rec.Result); ok {
			dd.Fault = string(p)
		}
		if rec.Result.Err != nil {
			dd.Error = rec.Result.Err.Error()
		}
		cd.Deliveries = append(cd.Deliveries, dd)
	}
	return cd
}

// JSON writes the run as one indented JSON document.
func JSON(w io.Writer, run *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // check names and messages stay readable
	return enc.Encode(NewDocument(run))
}
