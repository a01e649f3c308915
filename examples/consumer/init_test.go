package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInitTargetStarter: the scenario `redeliver init --target http` writes,
// filled in for this consumer the way a user fills it in (each quoted
// "<fill in: …>" replaced, DATABASE_URL from the environment), validates
// and passes against the safe consumer, and fails the consumer that does
// not deduplicate.
func TestInitTargetStarter(t *testing.T) {
	defer parallel(t)()
	bin := buildConsumer(t)
	dir, data := initStarter(t, "my-consumer")
	fillStarter(t, dir, data, "${DATABASE_URL}")
	for _, tt := range []struct {
		flaw, want string
		exit       int
	}{
		{"safe", "PASS: redelivered three times, crash while processing, then redelivery, lost answer, concurrent duplicates", 0},
		{"none", "invariant duplicate-effect broken", 1},
	} {
		t.Run(tt.flaw, func(t *testing.T) {
			env := consumerEnv(t, bin, tt.flaw)
			env["DATABASE_URL"] = env["DB"]
			withPlainRedeliver(t, env)
			if o := redeliver(t, env, "validate", dir); o.exit != 0 {
				t.Fatalf("validate: %s", o)
			}
			if o := redeliver(t, env, "run", dir); o.exit != tt.exit || !strings.Contains(o.stdout, tt.want) {
				t.Fatalf("want exit %d and %q, got\n%s", tt.exit, tt.want, o)
			}
		})
	}
}

// TestInitTargetStarterOnEachDB: `redeliver init --target http --db
// postgres://…` (or mysql://…) writes the starter with the proxy and the
// statement checks; filled in for this consumer, it passes the safe
// consumer and catches, at a statement boundary, the flaw whose window
// lies between two of its commits, which a timed kill rarely hits. On
// PostgreSQL and on MySQL or MariaDB.
func TestInitTargetStarterOnEachDB(t *testing.T) {
	defer parallel(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	for _, db := range dbs {
		t.Run(db.name, func(t *testing.T) {
			defer parallelInHeavy(t)()
			dsn := db.fresh(t)
			dir, data := initStarter(t, "my-service", "--db", dsn)
			if !strings.Contains(string(data), "proxy: true") || !strings.Contains(string(data), "crash: statements") || !strings.Contains(string(data), `db: "${DATABASE_URL:-`+dsn+`}"`) {
				t.Fatalf("the starter has no proxy, no statement check or not the database:\n%s", data)
			}
			fillStarter(t, dir, data, "${REDELIVER_DB_URL}")
			// The two runs side by side, each on an empty database of its
			// own (the starter reads it from DATABASE_URL).
			var runs []invocation
			for _, tt := range []struct {
				flaw, want string
				exit       int
			}{
				{"safe", "PASS: redelivered three times, killed at every statement, then redelivery, lost answer, concurrent duplicates", 0},
				{"marker-after-effect", "invariant duplicate-effect broken", 1},
			} {
				env := consumerEnv(t, bin, tt.flaw)
				env["DATABASE_URL"] = db.another(t)
				withPlainRedeliver(t, env)
				runs = append(runs, invocation{name: tt.flaw, env: env, args: []string{"run", dir, "-v"}, check: func(t *testing.T, o outcome) {
					if o.exit != tt.exit || !strings.Contains(o.stdout, tt.want) {
						t.Fatalf("want exit %d and %q, got\n%s", tt.exit, tt.want, o)
					}
					// The kills were at the consumer's statements, as this
					// database's trace writes them.
					if want := db.text("commit → COMMIT"); !strings.Contains(o.stdout, want) {
						t.Errorf("the trace lacks %q:\n%s", want, o)
					}
				}})
			}
			runConcurrently(t, runs)
		})
	}
}

// initStarter runs `redeliver init --target http` with args into a new
// directory name, and returns the directory and the consumer.yaml it
// wrote there.
func initStarter(t *testing.T, name string, args ...string) (string, []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	env := map[string]string{}
	withPlainRedeliver(t, env)
	if o := redeliver(t, env, append(append([]string{"init", "--target", "http"}, args...), dir)...); o.exit != 0 {
		t.Fatalf("init: %s", o)
	}
	data, err := os.ReadFile(filepath.Join(dir, "consumer.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// fillStarter fills in data, the starter init wrote to dir, for this
// consumer the way a user does: each quoted "<fill in: …>" replaced, the
// consumer given the database db names.
func fillStarter(t *testing.T, dir string, data []byte, db string) {
	t.Helper()
	fill := []struct{ what, yaml string }{
		{"the URL your service", `"http://127.0.0.1:${PORT}/events"`},
		{"the program that runs", `"${CONSUMER}", --listen, "127.0.0.1:${PORT}", --db, "` + db + `", --flaw, "${FLAW}"`},
		{"the URL that answers 2xx", `"http://127.0.0.1:${PORT}/healthz"`},
		{"a statement that empties", `"DELETE FROM payments", "DELETE FROM processed_messages", "DELETE FROM provider_charges"`},
		{"your effect table", "payments"},
		{"the column naming", "order_id"},
	}
	for _, f := range fill {
		re := regexp.MustCompile(`"<fill in: ` + regexp.QuoteMeta(f.what) + `[^>]*>"`)
		if !re.Match(data) {
			t.Fatalf("the starter has no placeholder %q:\n%s", f.what, data)
		}
		data = re.ReplaceAllLiteral(data, []byte(f.yaml))
	}
	if err := os.WriteFile(filepath.Join(dir, "consumer.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
