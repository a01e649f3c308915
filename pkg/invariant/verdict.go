package invariant

// Verdict is what a run or a replay concluded, in the word every report
// (text, JSON, JUnit, TAP, GitHub) writes for it.
type Verdict string

// The verdicts.
const (
	Pass  Verdict = "pass"  // every check and invariant held
	Fail  Verdict = "fail"  // a check failed or an invariant broke
	Error Verdict = "error" // it did not finish: the harness failed or was stopped
)
