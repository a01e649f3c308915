package diagnose

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// FuzzDiagnose: whatever statements a consumer sends and whatever came
// back, the diagnosis neither panics nor names evidence outside the
// trace, and a not-recognised one carries nothing else.
func FuzzDiagnose(f *testing.F) {
	f.Add(lookup, "SELECT 0", payment, "INSERT 0 1", "commit", "COMMIT", uint8(1), true)
	f.Add("INSERT INTO balances (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET total = balances.total + excluded.total", "INSERT 0 1", "SET autocommit=0", "OK", "INSERT IGNORE INTO `x`.`processed` VALUES (?)", "INSERT 0 2", uint8(2), false)
	f.Add("WITH x AS (SELECT 1) INSERT INTO payments SELECT * FROM x", "ERROR 23505", "update ONLY \"p\" set n = n - 1", "UPDATE 1", "", "", uint8(0), true)
	f.Fuzz(func(t *testing.T, t1, a1, t2, a2, t3, a3 string, w uint8, held bool) {
		for _, vs := range [][]invariant.Violation{duplicate, lost, changed} {
			trace := []consumer.Statement{
				{Worker: 1, Text: t1, Answer: a1},
				{Worker: int(w % 3), Text: t2, Answer: a2, Extended: held, Sync: int(w % 2)},
				{Worker: 2, Text: t3, Answer: a3, Held: held, AnsweredBefore: a1},
			}
			for _, dialect := range []string{"postgres", "mysql", ""} {
				d := Diagnose(Facts{Dialect: dialect, EffectTable: "payments", Violations: vs, Trace: trace})
				if d == nil {
					t.Fatal("no diagnosis of a trace")
				}
				for _, n := range d.Evidence {
					if n < 1 || n > len(trace) {
						t.Fatalf("evidence %d outside the trace of %d", n, len(trace))
					}
				}
				if d.Pattern == NotRecognised && (d.Why != "" || d.Fix != "" || len(d.Evidence) > 0) {
					t.Fatalf("not recognised carries %+v", d)
				}
				if d.Pattern != NotRecognised && (d.Why == "" || d.Fix == "") {
					t.Fatalf("%s without why or fix", d.Pattern)
				}
			}
		}
	})
}
