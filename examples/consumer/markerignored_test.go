package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestDiagnosisMarkerIgnored: the example consumer with --flaw none writes
// its marker (an insert that skips an existing key) in the payment's
// transaction and never reads the insert's answer. Two deliveries raced
// at every statement boundary, over HTTP and one process per delivery, on
// PostgreSQL and MySQL or MariaDB, on seeds 1–3: the race is named
// marker-ignored, and so are its kills after the COMMIT, from the
// redelivery that follows the killed attempt in the trace (its marker
// insert wrote no row, and it paid again); no failing check of the flaw
// is named by another pattern.
func TestDiagnosisMarkerIgnored(t *testing.T) {
	defer parallelFirst(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	const (
		one    = "killed at every statement boundary of one payment"
		commit = "killed right after the payment's commit, before it answers"
		raced  = "two deliveries raced at every statement boundary"
		race   = `
  - name: two deliveries raced at every statement boundary
    steps:
      - deliver: {id: evt-62, source: /orders, type: order.paid, data: {orderId: O-62, amount: 62}}
        concurrent: 2
    expect:
      effects: {O-62: 1}
`
	)
	eachDB(t, dbs, func(t *testing.T, db statementDB) {
		src := readExample(t, db.exec)
		if db.name == "mysql" {
			// As TestMySQLDiagnosisOfEachFlaw: the tables emptied, not
			// dropped, their AUTO_INCREMENT counters running on.
			src = rewrite(t, db.exec, src,
				`reset: ["DROP TABLE IF EXISTS payments, processed_messages, provider_charges"]`,
				`reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]`)
		}
		execRace := writeTemp(t, "exec-race.yaml", src+race)
		var runs []invocation
		for seed := 1; seed <= 3; seed++ {
			if !seedRuns(seed) {
				continue
			}
			for _, file := range []string{db.statements, execRace} {
				must := []string{one, commit, raced}
				if file == execRace {
					must = []string{one, raced}
				}
				env := consumerEnv(t, bin, "none")
				env[db.dbVar] = db.another(t)
				if db.name == "mysql" && file == execRace {
					st, err := openStore(context.Background(), env[db.dbVar])
					if err != nil {
						t.Fatal(err)
					}
					st.db.Close()
				}
				withPlainRedeliver(t, env)
				runs = append(runs, invocation{
					name:  fmt.Sprintf("%s/seed-%d", filepath.Base(file), seed),
					env:   env,
					args:  []string{"run", file, "--seed", fmt.Sprint(seed), "--format", "json"},
					check: func(t *testing.T, o outcome) { checkDiagnoses(t, o, "marker-ignored", must) },
				})
			}
		}
		runAtMost(t, runs, 3)
	})
}
