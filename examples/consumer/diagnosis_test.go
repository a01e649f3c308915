package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// diagnosed is what the JSON report says of a check.
type diagnosed struct {
	Files []struct {
		Checks []struct {
			Name      string `json:"name"`
			Passed    bool   `json:"passed"`
			Diagnosis *struct {
				Pattern  string `json:"pattern"`
				Evidence []int  `json:"evidence"`
				Why      string `json:"why"`
				Fix      string `json:"fix"`
			} `json:"diagnosis"`
		} `json:"checks"`
	} `json:"files"`
}

// TestDiagnosisOfEachFlaw: the example consumer with each flaw whose
// window lies between its statements (through HTTP and one process per
// delivery, on PostgreSQL, through the proxy) or at its externals (the
// stand-ins), on seeds 1–3: every check the flaw fails is named by that
// flaw's pattern where the listed checks are, and no failing check of it
// is named by another pattern (a check whose trace does not hold the
// evidence says not-recognised); the safe consumer passes, carrying no
// diagnosis.
func TestDiagnosisOfEachFlaw(t *testing.T) {
	defer parallelFirst(t)()
	pg := pgDSN(t)
	bin := buildConsumer(t)
	// The exec file, with a race appended: two processes at once, each
	// held at each boundary of its statements.
	src, err := os.ReadFile(filepath.Join(repoRoot, "examples/consumer/exec-statements.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	execRace := filepath.Join(t.TempDir(), "exec-race.yaml")
	race := `
  - name: two deliveries raced at every statement boundary
    steps:
      - deliver: {id: evt-62, source: /orders, type: order.paid, data: {orderId: O-62, amount: 62}}
        concurrent: 2
    expect:
      effects: {O-62: 1}
`
	if err := os.WriteFile(execRace, append(src, race...), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		statements = "examples/consumer/statements.yaml"
		externals  = "examples/consumer/scenarios/externals.yaml"
		one        = "killed at every statement boundary of one payment"
		commit     = "killed right after the payment's commit, before it answers"
		raced      = "two deliveries raced at every statement boundary"
	)
	tests := []struct {
		flaw, file string
		pattern    string   // "": the safe consumer
		named      []string // the checks that must carry pattern
		work       string
	}{
		{"safe", statements, "", nil, ""},
		{"marker-after-effect", statements, "effect-and-marker-apart", []string{one, commit, raced}, ""},
		{"marker-after-autocommit", statements, "effect-and-marker-apart", []string{one, raced}, ""},
		{"check-then-act", statements, "check-then-act", []string{raced}, ""},
		{"ack-before-commit", statements, "ack-before-commit", []string{one}, ""},
		{"commit-after-answer", statements, "ack-before-commit", []string{one}, ""},
		{"safe", execRace, "", nil, ""},
		{"marker-after-effect", execRace, "effect-and-marker-apart", []string{one, "killed before the marker is written", raced}, ""},
		{"check-then-act", execRace, "check-then-act", []string{raced}, ""},
		{"safe", externals, "", nil, "100ms"},
		{"charge-without-key", externals, "external-call-without-key", []string{"the provider charged, and its answer was lost", "killed after the charge, before its answer"}, "100ms"},
		{"random-key", externals, "unstable-key", []string{"killed after the charge, before its answer"}, "100ms"},
		{"mail-before-commit", externals, "external-call-without-key", []string{"killed again and again during the work, charged and mailed at most once"}, "500ms"},
	}
	// One seed at a time, five runs at once: thirteen at once, beside
	// the rest of the suite, loaded a 2-core machine until a hold came
	// too late to race and a flaw went unnamed.
	for seed := 1; seed <= 3; seed++ {
		if !seedRuns(seed) {
			continue
		}
		var runs []invocation
		for i, tt := range tests {
			env := consumerEnv(t, bin, tt.flaw)
			schema := schemaDSN(t, pg, fmt.Sprintf("redeliver_diagnosis_%d_%d", i, seed))
			env["PGDB"], env["DB"] = schema, schema
			if tt.work != "" {
				env["WORK"] = tt.work
			}
			withPlainRedeliver(t, env)
			runs = append(runs, invocation{
				name:  tt.flaw + "/" + filepath.Base(tt.file),
				env:   env,
				args:  []string{"run", tt.file, "--seed", fmt.Sprint(seed), "--format", "json"},
				check: func(t *testing.T, o outcome) { checkDiagnoses(t, o, tt.pattern, tt.named) },
			})
		}
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) { runAtMost(t, runs, 5) })
	}
}

// checkDiagnoses reads a run's JSON report: a safe consumer's (pattern
// "") passes with no diagnosis; a flaw's failing checks are each named
// by pattern or not recognised, never by another pattern, and those
// named must carry pattern.
func checkDiagnoses(t *testing.T, o outcome, pattern string, must []string) {
	t.Helper()
	var doc diagnosed
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || len(doc.Files) != 1 || o.exit > 1 {
		t.Fatalf("no JSON report (%v):\n%s", err, o)
	}
	if pattern == "" && o.exit != 0 {
		t.Fatalf("the safe consumer failed:\n%s", o)
	}
	named := map[string]bool{}
	for _, c := range doc.Files[0].Checks {
		d := c.Diagnosis
		switch {
		case c.Passed && d != nil:
			t.Errorf("%s passed and carries a diagnosis: %+v", c.Name, *d)
		case c.Passed:
		case d == nil:
			t.Errorf("%s failed and carries no diagnosis", c.Name)
		case d.Pattern == pattern:
			named[c.Name] = true
			if d.Why == "" || d.Fix == "" {
				t.Errorf("%s: %s with no why or fix: %+v", c.Name, d.Pattern, *d)
			}
		case d.Pattern != "not-recognised":
			t.Errorf("%s named %s (%s), want %s or not-recognised", c.Name, d.Pattern, d.Why, pattern)
		}
	}
	for _, n := range must {
		if !named[n] {
			t.Errorf("%q is not named %s:\n%s", n, pattern, o)
		}
	}
}

// TestDiagnosisBehindEachBroker is the broker part of the matrix of the
// example consumer's flaws (TestDiagnosisOfEachFlaw holds HTTP, exec and
// the externals on PostgreSQL, TestMySQLDiagnosisOfEachFlaw HTTP and exec
// on MySQL): each flaw whose window lies between its statements, behind
// JetStream, RabbitMQ and Kafka, on PostgreSQL and MySQL, killed at its
// statements through the proxy (brokers/*-statements*.yaml), and
// check-then-act behind JetStream and RabbitMQ, two instances raced at
// their statements (brokers/*-races.yaml). Every check
// a flaw fails is named by its pattern or not recognised, never by
// another, and the listed checks must carry it; where the broker showed
// the ack the trace marks it; the safe consumer carries no diagnosis.
//
// none (its marker's insert unread) is named marker-ignored killed after
// its COMMIT, from the redelivery the broker made after the kill.
//
// A file takes 15 to 50 s here, a race behind RabbitMQ the longest:
// the heavy tier runs each flaw behind each broker once, on one
// database, PostgreSQL and MySQL by turns, its seed turning 1, 2, 3
// along the rows (18 runs); make test the rows of those no other of its
// tests shows (brokerDiagnosisQuick); REDELIVER_TEST_HEAVY=all every row on both
// databases on seeds 1–3 (108 runs, too long for CI's hour). The database
// or broker a row needs and the machine lacks skips that row, saying so
// (under CI it fails, as elsewhere).
func TestDiagnosisBehindEachBroker(t *testing.T) {
	defer parallel(t)()
	bin := buildConsumer(t)
	const (
		one    = "killed at every statement boundary of one payment"
		apart  = "effect-and-marker-apart"
		ackPat = "ack-before-commit"
	)
	type row struct {
		broker, flaw, pattern string
		named                 []string
		mark                  string // the ack's mark in the trace: "acked", "offset committed"
		races                 bool   // run brokers/*-races.yaml: two instances raced at their statements
	}
	var rows []row
	for _, b := range []struct{ name, ack, commit string }{
		{"nats", "acked", "killed right after the payment's commit, before the ack"},
		{"amqp", "acked at the latest", "killed right after the payment's commit, before the ack"},
		{"kafka", "offset committed", "killed right after the payment's commit, before the offset commit"},
	} {
		rows = append(rows,
			row{b.name, "safe", "", nil, "", false},
			row{b.name, "marker-after-effect", apart, []string{one, b.commit}, "", false},
			// No COMMIT: its check after the commit is never reached.
			row{b.name, "marker-after-autocommit", apart, []string{one}, "", false},
			row{b.name, "ack-before-commit", ackPat, []string{one}, b.ack, false},
		)
		if b.name == "kafka" {
			// One record's trace cannot show the batch committed at
			// poll: an offset committed before the work is an ack
			// before the COMMIT.
			rows = append(rows, row{b.name, "commit-before-work", ackPat, []string{one}, b.ack, false})
		} else {
			// Kafka hands one partition's records to one member in
			// order: no two copies of a key race there.
			rows = append(rows, row{b.name, "check-then-act", "check-then-act", []string{"two copies raced on two instances at every statement boundary"}, "", true})
		}
	}
	// none writes its marker in the payment's transaction and never
	// reads the insert's answer: killed after its COMMIT, the broker's
	// redelivery (its statements follow the killed attempt's) wrote no
	// marker row and paid again. Added after the others, which keep
	// their turns of database and seed: Kafka's on PostgreSQL.
	for _, b := range []struct{ name, commit string }{
		{"nats", "killed right after the payment's commit, before the ack"},
		{"kafka", "killed right after the payment's commit, before the offset commit"},
		{"amqp", "killed right after the payment's commit, before the ack"},
	} {
		rows = append(rows, row{b.name, "none", "marker-ignored", []string{b.commit}, "", false})
	}
	setup := map[string]func(t *testing.T, env map[string]string){
		"nats": natsStream, "amqp": amqpQueue,
		"kafka": func(t *testing.T, env map[string]string) { kafkaCluster(t, env) },
	}
	all := statementDBs(t)
	for i, r := range rows {
		dbs, seeds := []statementDB{all[i%len(all)]}, []int{1 + i%3}
		if heavyAll() {
			dbs, seeds = all, []int{1, 2, 3}
		}
		for _, db := range dbs {
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("%s/%s/%s/seed-%d", r.broker, db.name, r.flaw, seed), func(t *testing.T) {
					if !brokerDiagnosisQuick(r.broker, r.flaw) {
						heavyOnly(t, "make test names this flaw over HTTP (TestDiagnosisOfEachFlaw) and behind JetStream and RabbitMQ (TestBrokerStatementFaults, TestBrokerStatementFaultsAfterAck, TestBrokerRaces), Kafka's offset mark in its commit-before-work row")
					}
					defer parallelInHeavy(t)()
					file := "examples/consumer/brokers/" + r.broker + "-statements.yaml"
					if r.races {
						file = "examples/consumer/brokers/" + r.broker + "-races.yaml"
					}
					env := map[string]string{"CONSUMER": bin, "FLAW": r.flaw, "DATABASE_URL": db.fresh(t)}
					db.brokerSlot(t)
					setup[r.broker](t, env)
					// Its subject is the diagnosis: the race-enabled
					// redeliver runs the broker paths in the tests above.
					withPlainRedeliver(t, env)
					o := redeliver(t, env, "run", file, "--seed", fmt.Sprint(seed), "--format", "json")
					checkDiagnoses(t, o, r.pattern, r.named)
					if r.mark != "" && !regexp.MustCompile(`"answered_before":\s*"`+r.mark+`"`).MatchString(o.stdout) {
						t.Errorf("want the ack marked %q in a trace, got\n%s", r.mark, o)
					}
				})
			}
		}
	}
}

// brokerDiagnosisQuick says which rows of TestDiagnosisBehindEachBroker
// make test runs: those whose diagnosis no other test of make test shows
// behind a broker. TestBrokerStatementFaults asserts the safe consumer's
// pass and marker-after-effect's "why: effect and marker apart" behind
// JetStream and RabbitMQ, TestBrokerStatementFaultsAfterAck
// ack-before-commit's why and its ack mark behind both, TestBrokerRaces
// check-then-act's why and fix behind both (each on one database; these
// rows run them on the other in the heavy tier); left here is
// commit-before-work behind Kafka (which also shows make test the kills at
// statements behind Kafka, and the offset commit marked).
// marker-after-autocommit is named over HTTP by TestDiagnosisOfEachFlaw,
// its diagnosis the same behind any broker; none's marker ignored, from
// the broker's redelivery, by TestBrokerStatementFaults behind each
// broker.
func brokerDiagnosisQuick(broker, flaw string) bool {
	return flaw == "commit-before-work"
}

// TestDiagnosisInTheTextReport: the text report of the example consumer
// with marker-after-effect says why and the fix right after the
// invariant, with the statement numbers of the trace below. On
// PostgreSQL and on MySQL or MariaDB, whose fix is said in its own SQL.
func TestDiagnosisInTheTextReport(t *testing.T) {
	defer parallel(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	eachDB(t, dbs, func(t *testing.T, db statementDB) {
		env := consumerEnv(t, bin, "marker-after-effect")
		env[db.dbVar] = db.another(t)
		withPlainRedeliver(t, env)
		runConcurrently(t, []invocation{{
			name: "marker-after-effect",
			env:  env,
			args: []string{"run", db.exec},
			check: func(t *testing.T, o outcome) {
				want := strings.Join([]string{
					"  invariant duplicate-effect broken: key O-60 has 2 rows in payments (events evt-60, evt-60), by step 1 (" + db.exec + db.pick(":36:9)", ":34:9)"),
					"  why: effect and marker apart — the delivery wrote payments at statement 4, committed at statement 5 with no write to processed_messages in its transaction; the kill after statement 5 came before processed_messages was written, so the redelivery found no row in processed_messages and made the effect again",
					"  fix: " + db.pick(
						"make the marker insert the guard, in the effect's transaction: INSERT INTO processed_messages … ON CONFLICT DO NOTHING RETURNING …; go on only if a row was inserted (else answer as a duplicate), then write payments and COMMIT",
						"give processed_messages a unique key on the event id and, in the effect's transaction, INSERT IGNORE INTO processed_messages first; go on only if it affected 1 row (else answer as a duplicate), then write payments and COMMIT"),
					"  statements of the delivery:",
				}, "\n")
				if o.exit != 1 || !strings.Contains(o.stdout, want) {
					t.Errorf("want exit 1 and\n%s\ngot\n%s", want, o)
				}
				if !strings.Contains(o.stdout, "    4. INSERT INTO payments") || !strings.Contains(o.stdout, db.text("    5. commit → COMMIT ✂ killed here")) {
					t.Errorf("the trace does not number the evidence as the diagnosis does:\n%s", o)
				}
			},
		}})
	})
}

// TestReplayGroupsByPattern: a replay into the example consumer through
// the proxy, killed at statement boundaries drawn from --seed, groups the
// keys of each broken invariant by the pattern their kill's statements
// show, in the text and the JSON report (valid against its schema's
// words: a pattern of the diagnosis); the safe consumer passes with
// none. On PostgreSQL and on MySQL or MariaDB.
func TestReplayGroupsByPattern(t *testing.T) {
	defer parallel(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.ndjson")
	writeCapture(t, capture, 40)
	eachDB(t, dbs, func(t *testing.T, db statementDB) { replayGroupsByPattern(t, db, bin, capture) })
}

func replayGroupsByPattern(t *testing.T, db statementDB, bin, capture string) {
	var runs []invocation
	for _, tt := range []struct {
		flaw, want, pattern string
		exit                int
	}{
		{"safe", "", "", 0},
		{"marker-after-effect", "  why: effect and marker apart: ", "effect-and-marker-apart", 1},
		{"ack-before-commit", "  why: ack before commit: ", "ack-before-commit", 1},
	} {
		for _, format := range []string{"text", "json"} {
			env := consumerEnv(t, bin, tt.flaw)
			env[db.dbVar] = db.another(t)
			withPlainRedeliver(t, env)
			runs = append(runs, invocation{
				name: tt.flaw + "/" + format,
				env:  env,
				args: []string{"replay", capture, "--target", db.target, "--crash", "0.3", "--seed", "4", "--format", format},
				check: func(t *testing.T, o outcome) {
					if o.exit != tt.exit {
						t.Fatalf("want exit %d, got\n%s", tt.exit, o)
					}
					if format == "text" {
						if tt.want == "" && strings.Contains(o.stdout, "why: ") || !strings.Contains(o.stdout, tt.want) {
							t.Errorf("want %q, got\n%s", tt.want, o)
						}
						return
					}
					var doc struct {
						Violations []struct {
							Examples []struct {
								Pattern string `json:"pattern"`
							} `json:"examples"`
						} `json:"violations"`
					}
					if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil {
						t.Fatalf("no JSON report (%v):\n%s", err, o)
					}
					named := 0
					for _, v := range doc.Violations {
						for _, x := range v.Examples {
							switch x.Pattern {
							case tt.pattern:
								named++
							case "", "not-recognised":
							default:
								t.Errorf("a breach named %s, want %s", x.Pattern, tt.pattern)
							}
						}
					}
					if tt.pattern != "" && named == 0 {
						t.Errorf("no breach named %s:\n%s", tt.pattern, o.stdout)
					}
				},
			})
		}
	}
	runConcurrently(t, runs)
}
