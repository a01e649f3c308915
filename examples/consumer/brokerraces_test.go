package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestBrokerRaces runs examples/consumer/brokers/*-races.yaml through
// the redeliver command: two instances behind JetStream and RabbitMQ,
// each taking one message at a time (--prefetch 1), and two members of
// a Kafka group, each holding a partition the event's copies are
// produced to, connected to the database through redeliver's proxy.
// The event is published twice and the two copies raced at every
// boundary of each worker's statements; the trace names the instance
// whose process held each connection, and the copies ran on both. The
// safe consumer passes every schedule; check-then-act is caught on seeds
// 1–3 (behind Kafka, seed 1 here), and named with its fix. The kill right
// after a commit lands in the instance that holds the payment's
// connection. On PostgreSQL and on MySQL or MariaDB.
func TestBrokerRaces(t *testing.T) {
	defer parallelFirst(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	var runs []invocation
	for _, db := range dbs {
		for bi, b := range []struct {
			name  string
			setup func(t *testing.T, env map[string]string)
			race  string
			kill  bool     // the file kills the instance holding a commit too
			seeds []string // of check-then-act
		}{
			{"nats", natsStream, "two copies raced on two instances at every statement boundary", true, []string{"1", "2", "3"}},
			{"amqp", amqpQueue, "two copies raced on two instances at every statement boundary", true, []string{"1", "2", "3"}},
			// A Kafka race takes about 40 s (both members start afresh
			// and the group settles at each trial): one seed here; seeds
			// 2 and 3 were run by hand.
			{"kafka", func(t *testing.T, env map[string]string) { kafkaCluster(t, env) }, "two copies raced on two members at every statement boundary", false, []string{"1"}},
		} {
			file := "examples/consumer/brokers/" + b.name + "-races.yaml"
			race := b.race
			safe := []*regexp.Regexp{
				regexp.MustCompile(`(?m)^` + race + `: 2 deliveries: 2 acked; table payments holds 1 row \(\d+ schedules\)`),
				regexp.MustCompile(`(?m)^PASS: ` + race + `$`),
			}
			if b.kill {
				safe[1] = regexp.MustCompile(`(?m)^PASS: ` + race + `, the instance holding the commit killed right after it$`)
				// "worker 1 (instance N): " when the redelivery after the
				// kill, on the other instance, shows in the trace too.
				safe = append(safe, db.re(`(?m)^    (worker 1 \()?instance [12]\)?: 6\. commit → COMMIT ✂ killed here, before the consumer saw the answer$`))
			}
			for ti, tt := range []struct {
				flaw, seed string
				exit       int
				want       []*regexp.Regexp
			}{
				{"safe", "1", 0, safe},
				{"check-then-act", "1", 1, nil},
				{"check-then-act", "2", 1, nil},
				{"check-then-act", "3", 1, nil},
			} {
				if tt.flaw != "safe" && !slices.Contains(b.seeds, tt.seed) {
					continue
				}
				if !brokerRowRuns(bi+ti, dbs, db, b.name, tt.flaw, tt.seed, b.seeds) {
					continue
				}
				if tt.exit == 1 {
					// The diagnosis names the flaw and its fix (in JSON,
					// TestDiagnosisBehindEachBroker on the other database).
					tt.want = []*regexp.Regexp{
						regexp.MustCompile(`(?m)^` + race + `: FAIL: failed in \d+ of \d+ schedules; first in schedule \d+ `),
						regexp.MustCompile(`invariant duplicate-effect broken: key O-40 has 2 rows in payments \(events evt-40, evt-40\)`),
						regexp.MustCompile(`(?m)^ +why: check-then-act — worker \d read \S+ \(0 rows\) at statement \d+`),
						regexp.MustCompile(`(?m)^ +fix: \S`),
					}
				}
				runs = append(runs, brokerFileRun(t, db, bin, b.name, b.setup, file, tt.flaw, tt.seed, func(t *testing.T, o outcome) {
					checkBrokerRace(t, o, race, tt.exit, tt.want)
				}))
			}
		}
	}
	// The runs wait on brokers and schedules, computing little (one takes
	// 20 to 50 s for about 3 s of CPU): they start together from this
	// test's body, each once its database has a broker slot, rather than
	// as parallel subtests, which go test would start only after every
	// other test of the package had had its turn.
	runAtMost(t, runs, 4)
}

// TestBrokerRaceSlowStart races two copies behind RabbitMQ on two
// instances that wait 600 ms after taking each message before their
// first statement (--take): every copy is handed out, and a worker may
// reach its boundary, only after the broker has drained. The safe
// consumer passes every schedule; a trial that took the copies to be
// done once handed out failed it, as if it ran no statement through the
// proxy. check-then-act is still caught (the heavy tier; TestBrokerRaces
// catches it at once). Its kill at the commit, with instances that wait
// 1.5 s, is held and passes: a watch that took the message for done once
// the broker had handed it out followed no statement of it. On
// PostgreSQL.
func TestBrokerRaceSlowStart(t *testing.T) {
	defer parallelFirst(t)()
	var pg []statementDB
	for _, db := range statementDBs(t) {
		if db.name == "postgres" {
			pg = append(pg, db)
		}
	}
	if len(pg) == 0 {
		t.Skip("needs PostgreSQL")
	}
	db := pg[0]
	bin := buildConsumer(t)
	src := readExample(t, "examples/consumer/brokers/amqp-races.yaml")
	const race = "two copies raced on two instances at every statement boundary"
	src = rewrite(t, "amqp-races.yaml", src, `--prefetch, "1",`, `--prefetch, "1", --take, 600ms,`)
	kill := strings.Index(src, "  - name: the instance holding the commit")
	if kill < 0 {
		t.Fatal("amqp-races.yaml changed: its kill check is not where this test looks")
	}
	// The kill check alone, its instances taking 1.5 s over a message:
	// longer than the broker's settle time and the quiet after it, so
	// that the broker says the message was taken well before a statement
	// of it comes.
	killSrc := rewrite(t, "amqp-races.yaml", src[:strings.Index(src, "checks:")]+"checks:\n"+src[kill:], `--take, 600ms,`, `--take, 1500ms,`)
	src = src[:kill]
	file := writeTemp(t, "slow-start.yaml", src)
	var runs []invocation
	killRun := brokerFileRun(t, db, bin, "amqp", amqpQueue, writeTemp(t, "slow-start-kill.yaml", killSrc), "safe", "1", func(t *testing.T, o outcome) {
		t.Log(o.stdout)
		if o.exit != 0 || !strings.Contains(o.stdout, "\nPASS: the instance holding the commit killed right after it\n") {
			t.Fatalf("want the kill check passed, got\n%s", o)
		}
	})
	killRun.name += "/kill-at-commit"
	runs = append(runs, killRun)
	for _, tt := range []struct {
		flaw string
		exit int
		want []*regexp.Regexp
	}{
		{"safe", 0, []*regexp.Regexp{
			regexp.MustCompile(`(?m)^` + race + `: 2 deliveries: 2 acked; table payments holds 1 row \(\d+ schedules\)`),
			regexp.MustCompile(`(?m)^PASS: ` + race + `$`),
		}},
		{"check-then-act", 1, []*regexp.Regexp{
			regexp.MustCompile(`invariant duplicate-effect broken: key O-40 has 2 rows in payments \(events evt-40, evt-40\)`),
		}},
	} {
		if tt.flaw != "safe" && !heavy() {
			continue
		}
		runs = append(runs, brokerFileRun(t, db, bin, "amqp", amqpQueue, file, tt.flaw, "1", func(t *testing.T, o outcome) {
			checkBrokerRace(t, o, race, tt.exit, tt.want)
		}))
	}
	runAtMost(t, runs, 2)
}

// brokerRowRuns says whether this tier runs row i of a broker file's
// table (TestBrokerRaces, TestBrokerStatementFaults) on db, with flaw
// on seed: make test runs JetStream's and RabbitMQ's rows (Kafka's are
// the heavy tier's), on one database by turns (onTurnHere), a flaw on
// the first of its seeds; the heavy tier every row.
func brokerRowRuns(i int, dbs []statementDB, db statementDB, broker, flaw, seed string, seeds []string) bool {
	if heavy() {
		return true
	}
	return broker != "kafka" && (flaw == "safe" || seed == seeds[0]) && onTurnHere(i, dbs, db)
}

// brokerFileRun is one run of a broker file for runAtMost: the consumer
// with flaw on an empty database of db's, the broker made ready by setup,
// the file run verbose on seed in db's broker slot, its outcome checked by
// check.
func brokerFileRun(t *testing.T, db statementDB, bin, broker string, setup func(*testing.T, map[string]string), file, flaw, seed string, check func(*testing.T, outcome)) invocation {
	env := map[string]string{"CONSUMER": bin, "FLAW": flaw, "DATABASE_URL": db.another(t)}
	setup(t, env)
	return invocation{
		name:  fmt.Sprintf("%s/%s/%s/seed-%s", db.name, broker, flaw, seed),
		env:   env,
		args:  []string{"run", file, "-v", "--seed", seed},
		slot:  db.slots,
		check: check,
	}
}

// checkBrokerRace checks one run of TestBrokerRaces: its exit and lines,
// and its trace, each worker's connection named with the instance whose
// process held it, and both instances took a copy.
func checkBrokerRace(t *testing.T, o outcome, race string, exit int, want []*regexp.Regexp) {
	t.Log(o.stdout)
	if o.exit != exit {
		t.Fatalf("want exit %d, got\n%s", exit, o)
	}
	for _, w := range want {
		if !w.MatchString(o.stdout) {
			t.Errorf("stdout lacks %s:\n%s", w, o)
		}
	}
	at := strings.Index(o.stdout, race)
	if at < 0 {
		t.Fatalf("no line of the race %q:\n%s", race, o)
	}
	trace := o.stdout[at:]
	if end := strings.Index(trace, "\nthe instance holding"); end >= 0 {
		trace = trace[:end]
	}
	for _, i := range []string{"1", "2"} {
		if !regexp.MustCompile(`(?m)^    worker \d \(instance ` + i + `\): \d+\. `).MatchString(trace) {
			t.Errorf("the race's trace names no statement of instance %s:\n%s", i, trace)
		}
	}
	// On a loaded machine JetStream can hand both copies to one instance
	// in a schedule; the report says so, and the trace above must still
	// show both instances.
	if strings.Contains(o.stdout, "raced nothing") {
		t.Logf("a schedule raced nothing, as the report says")
	}
	if !strings.Contains(o.stdout, "(2 instances)") {
		t.Errorf("want two instances, got\n%s", o)
	}
}
