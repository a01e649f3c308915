package main

// Two consumers of one event sharing a marker: a consumer written apart
// from the example (one process per delivery, as an exec target), for the
// diagnosis of a marker not scoped to the consumer. It runs two consumers
// of order.paid in turn: payments pays the order, points awards loyalty
// points. Each looks its marker up, then in one transaction inserts it
// (skipping when it is there) and writes its effect. With --shared both
// keep their marker in processed_messages keyed by the event id alone —
// the flaw: points finds the row payments wrote and skips — else each
// keeps its own in consumer_markers, keyed by (consumer, event_id).

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sharedMarkerCommand = "sharedmarker"

func runSharedMarker(args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet(sharedMarkerCommand, flag.ContinueOnError)
	db := fs.String("db", "", "the database URL")
	shared := fs.Bool("shared", false, "keep both markers in processed_messages, keyed by the event id alone")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	ctx := context.Background()
	body, err := io.ReadAll(stdin)
	if err != nil {
		return exitTempFail
	}
	ev, err := decodeCloudEvent(body)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitRejected
	}
	s, err := openStore(ctx, *db)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitTempFail
	}
	defer s.close()
	for _, ddl := range sharedMarkerDDL(s) {
		if _, err := s.db.ExecContext(ctx, ddl); err != nil {
			fmt.Fprintln(stderr, err)
			return exitTempFail
		}
	}
	for _, c := range []struct{ name, effect string }{
		{"payments", "INSERT INTO payments (order_id, event_id, amount) VALUES ($1, $2, $3)"},
		{"points", "INSERT INTO points (order_id, event_id, points) VALUES ($1, $2, $3)"},
	} {
		if err := consumeOnce(ctx, s, *shared, c.name, c.effect, ev); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
			return exitTempFail
		}
	}
	return exitAcked
}

func sharedMarkerDDL(s *store) []string {
	if s.mysql {
		return []string{
			"CREATE TABLE IF NOT EXISTS consumer_markers (consumer VARCHAR(64) NOT NULL, event_id VARCHAR(191) NOT NULL, PRIMARY KEY (consumer, event_id)) ENGINE=InnoDB",
			"CREATE TABLE IF NOT EXISTS points (id BIGINT AUTO_INCREMENT PRIMARY KEY, order_id VARCHAR(191) NOT NULL, event_id VARCHAR(191) NOT NULL, points INT NOT NULL) ENGINE=InnoDB",
		}
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS consumer_markers (consumer TEXT NOT NULL, event_id TEXT NOT NULL, PRIMARY KEY (consumer, event_id))",
		"CREATE TABLE IF NOT EXISTS points (id BIGSERIAL PRIMARY KEY, order_id TEXT NOT NULL, event_id TEXT NOT NULL, points INT NOT NULL)",
	}
}

// consumeOnce is one consumer's work for the event: its marker looked
// up, then inserted as the guard of its effect in one transaction.
func consumeOnce(ctx context.Context, s *store, shared bool, name, effect string, ev event) error {
	lookup, lookupArgs := "SELECT 1 FROM consumer_markers WHERE consumer = $1 AND event_id = $2", []any{name, ev.id}
	mark, markArgs := "INSERT INTO consumer_markers (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", []any{name, ev.id}
	if shared {
		lookup, lookupArgs = "SELECT 1 FROM processed_messages WHERE event_id = $1", []any{ev.id}
		mark, markArgs = "INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2) ON CONFLICT DO NOTHING", []any{ev.id, ev.payload}
	}
	if s.mysql {
		mark = strings.Replace(strings.TrimSuffix(mark, " ON CONFLICT DO NOTHING"), "INSERT INTO", "INSERT IGNORE INTO", 1)
	}
	var one int
	switch err := s.db.QueryRowContext(ctx, s.q(lookup), lookupArgs...).Scan(&one); err {
	case nil:
		return nil // done before
	case sql.ErrNoRows:
	default:
		return err
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, s.q(mark), markArgs...)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return nil // another delivery's is there
		}
		_, err = tx.ExecContext(ctx, s.q(effect), ev.orderID, ev.id, json.Number(ev.amount))
		return err
	})
}

// sharedMarkerScenario writes the scenario that runs the two consumers
// as an exec target behind the proxy, judging points: killed at every
// statement boundary of one delivery.
func sharedMarkerScenario(t *testing.T, mysqlDB bool) string {
	reset := `
  reset:
    - >-
      DO $$ BEGIN IF to_regclass('points') IS NOT NULL THEN
      DELETE FROM points; DELETE FROM payments; DELETE FROM processed_messages; DELETE FROM consumer_markers;
      END IF; END $$`
	if mysqlDB {
		reset = `
  reset: ["DROP TABLE IF EXISTS points, payments, processed_messages, provider_charges, consumer_markers"]`
	}
	file := filepath.Join(t.TempDir(), "shared-marker.yaml")
	doc := `version: 1
name: "payments and points: two consumers of one event"
target:
  exec:
    command: ["${SHAREDMARKER}", --db, "${REDELIVER_DB_URL}", "${SHARED}"]
    timeout: 30s
effects:
  db: "${EFFECTSDB}"
  proxy: true` + reset + `
  table: points
  key: order_id
  event: event_id
  key_of: "{data.orderId}"
checks:
  - name: points awarded once, killed at every statement boundary
    steps:
      - deliver: {id: evt-70, source: /orders, type: order.paid, data: {orderId: O-70, amount: 70}}
        crash: statements
    expect:
      effects: {O-70: 1}
`
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestDiagnosisMarkerNotScoped: two consumers of one event in one
// process. Sharing processed_messages keyed by the event id, points finds
// the row payments wrote and skips (lost-effect), named
// marker-not-scoped on PostgreSQL and MySQL; each keeping its own marker,
// keyed by (consumer, event_id), the same consumers pass with no
// diagnosis.
func TestDiagnosisMarkerNotScoped(t *testing.T) {
	defer parallel(t)()
	buildConsumer(t) // the go command, for the plain redeliver
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is the consumer: testscript.Main runs it as
	// sharedmarker when named so.
	bin := filepath.Join(t.TempDir(), sharedMarkerCommand)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	type db struct {
		name, dsn string
		mysql     bool
	}
	var dbs []db
	if pg := os.Getenv("REDELIVER_TEST_POSTGRES"); pg != "" {
		dbs = append(dbs, db{"postgres", pg, false})
	}
	if os.Getenv("REDELIVER_TEST_MYSQL") != "" {
		// One MySQL slot for the test's two runs there: taken twice, the
		// second waited for a test that held the other.
		dbs = append(dbs, db{"mysql", myDSN(t), true})
	}
	if len(dbs) == 0 {
		t.Skip("set REDELIVER_TEST_POSTGRES or REDELIVER_TEST_MYSQL to run the two consumers on a database")
	}
	var runs []invocation
	for _, d := range dbs {
		for _, shared := range []bool{true, false} {
			env := map[string]string{"SHAREDMARKER": bin, "SHARED": "--shared=false"}
			name := d.name + "/scoped"
			if shared {
				env["SHARED"], name = "--shared", d.name+"/shared"
			}
			if d.mysql {
				env["EFFECTSDB"] = myDatabase(t, d.dsn, "redeliver_sharedmarker_"+suffix())
			} else {
				env["EFFECTSDB"] = freshSchema(t, d.dsn)
			}
			withPlainRedeliver(t, env)
			file := sharedMarkerScenario(t, d.mysql)
			runs = append(runs, invocation{
				name: name,
				env:  env,
				args: []string{"run", file, "--format", "json"},
				check: func(t *testing.T, o outcome) {
					if !shared {
						checkDiagnoses(t, o, "", nil)
						return
					}
					if o.exit != 1 {
						t.Fatalf("want exit 1, got\n%s", o)
					}
					checkDiagnoses(t, o, "marker-not-scoped", []string{"points awarded once, killed at every statement boundary"})
				},
			})
		}
	}
	runConcurrently(t, runs)
}
