package report

import (
	"github.com/redeliver/redeliver/pkg/diagnose"
	"github.com/redeliver/redeliver/pkg/runner"
)

// diagnosisOf is why a target's failing check failed, read from what it
// recorded (pkg/diagnose), or nil: for a check that passed, for the
// built-in handler's checks (they record no trace: their failures are
// the handler's own strategies, named by the file), and for a check
// that recorded no statement, call or external's breach to read.
func diagnosisOf(f *runner.FileResult, c *runner.CheckResult) *diagnose.Diagnosis {
	if c.Passed || f.Target == "" {
		return nil
	}
	return diagnose.Diagnose(diagnose.Facts{Dialect: f.Dialect, EffectTable: f.EffectTable, Violations: c.Violations, Trace: c.Trace, Calls: c.Calls})
}

// diagnosisLines words a diagnosis: "why: check-then-act — worker 1
// read …" and "fix: …", or "why: not recognised" alone.
func diagnosisLines(d *diagnose.Diagnosis) []string {
	if d == nil {
		return nil
	}
	if d.Pattern == diagnose.NotRecognised {
		return []string{"why: " + d.Pattern.Words()}
	}
	return []string{"why: " + d.Pattern.Words() + " — " + d.Why, "fix: " + d.Fix}
}
