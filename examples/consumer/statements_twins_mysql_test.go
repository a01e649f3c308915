package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestMySQLDiagnosisOfEachFlaw: the twin of TestDiagnosisOfEachFlaw's
// statement rows, all of them, on MySQL or MariaDB (statements-mysql.yaml
// over HTTP, exec-statements-mysql.yaml with a race appended, one process
// per delivery), on seeds 1–3 (ack-before-commit on seed 1): every check a flaw fails is named by the
// same pattern as on PostgreSQL, no failing check by another; the safe
// consumer carries no diagnosis. Its externals rows have no twin: they
// kill at the stand-ins, not at statements, through no proxy.
func TestMySQLDiagnosisOfEachFlaw(t *testing.T) {
	defer parallelFirst(t)()
	my := myDSN(t)
	bin := buildConsumer(t)
	// The exec file's reset drops the tables, and InnoDB starts their
	// AUTO_INCREMENT again: two one-copy trials then leave the same
	// charge_id, which the race, its second copy burning an id, does
	// not, and the safe consumer would be said changed-by-duplicate. Here
	// the tables exist before the run and are emptied instead, their
	// counters running on, as on PostgreSQL.
	const execName = "examples/consumer/exec-statements-mysql.yaml"
	execSrc := rewrite(t, execName, readExample(t, execName),
		`reset: ["DROP TABLE IF EXISTS payments, processed_messages, provider_charges"]`,
		`reset: ["DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"]`)
	execRace := writeTemp(t, "exec-race.yaml", execSrc+`
  - name: two deliveries raced at every statement boundary
    steps:
      - deliver: {id: evt-62, source: /orders, type: order.paid, data: {orderId: O-62, amount: 62}}
        concurrent: 2
    expect:
      effects: {O-62: 1}
`)
	const (
		statements = "examples/consumer/statements-mysql.yaml"
		one        = "killed at every statement boundary of one payment"
		commit     = "killed right after the payment's commit, before it answers"
		raced      = "two deliveries raced at every statement boundary"
	)
	tests := []struct {
		flaw, file string
		pattern    string   // "": the safe consumer
		named      []string // the checks that must carry pattern
	}{
		{"safe", statements, "", nil},
		{"marker-after-effect", statements, "effect-and-marker-apart", []string{one, commit, raced}},
		{"marker-after-autocommit", statements, "effect-and-marker-apart", []string{one, raced}},
		{"check-then-act", statements, "check-then-act", []string{raced}},
		{"ack-before-commit", statements, "ack-before-commit", []string{one}},
		{"commit-after-answer", statements, "ack-before-commit", []string{one}},
		{"safe", execRace, "", nil},
		{"marker-after-effect", execRace, "effect-and-marker-apart", []string{one, "killed before the marker is written", raced}},
		{"check-then-act", execRace, "check-then-act", []string{raced}},
	}
	// One seed at a time. ack-before-commit runs on seed 1 alone, that
	// seed five runs at once as on PostgreSQL: among nine runs at once
	// its unforced run could end between the answer and the first
	// statement after it, and the check then had no boundary after the
	// answer to kill at; the other seeds run their eight at once, as
	// five at a time took a minute more.
	for seed := 1; seed <= 3; seed++ {
		if !seedRuns(seed) {
			continue
		}
		var runs []invocation
		for i, tt := range tests {
			if tt.flaw == "ack-before-commit" && seed != 1 {
				continue
			}
			env := consumerEnv(t, bin, tt.flaw)
			env["MYDB"] = myDatabase(t, my, fmt.Sprintf("redeliver_my_diagnosis_%d_%d_%s", i, seed, suffix()))
			if tt.file == execRace {
				st, err := openStore(context.Background(), env["MYDB"])
				if err != nil {
					t.Fatal(err)
				}
				st.db.Close()
			}
			withPlainRedeliver(t, env)
			runs = append(runs, invocation{
				name:  tt.flaw + "/" + filepath.Base(tt.file),
				env:   env,
				args:  []string{"run", tt.file, "--seed", fmt.Sprint(seed), "--format", "json"},
				check: func(t *testing.T, o outcome) { checkDiagnoses(t, o, tt.pattern, tt.named) },
			})
		}
		atOnce := len(runs)
		if seed == 1 {
			atOnce = 5
		}
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runAtMost(t, runs, atOnce) })
	}
}
