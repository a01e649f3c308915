package effects

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestWaitOnALockIsNamed: a reset statement or a read that waits on a
// lock another session holds gives up after the lock wait with one
// sentence naming that session — on PostgreSQL its pid, application
// name, state and query; on MySQL or MariaDB its thread id, user and
// state, as the server's own account of its lock waits says — instead of
// waiting without a word. On MySQL a read takes no lock (InnoDB reads a
// snapshot) and does not wait at all.
func TestWaitOnALockIsNamed(t *testing.T) {
	table := "fx_locked"
	for _, db := range []struct {
		name, env string
		// holder opens the session that holds the lock on its driver's
		// DSN, and id asks that session's pid or thread id.
		holder func(dsn string) string
		driver string
		id     string
		hold   []string
		reset  string
		// held is the pattern of the holder's words, given its id.
		held func(id string) string
		// readsWait: a read of the rows waits on the holder's lock.
		readsWait bool
	}{
		{
			name: "postgres", env: "REDELIVER_TEST_POSTGRES", driver: "pgx",
			holder: func(dsn string) string { return dsn + "&application_name=lock%20holder" },
			id:     "SELECT pg_backend_pid()",
			hold:   []string{"BEGIN; LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE; SELECT 42"},
			reset:  "TRUNCATE " + table,
			held: func(id string) string {
				return `backend ` + id + ` \(application "lock holder", idle in transaction, whose last query was "BEGIN; LOCK TABLE fx_locked IN ACCESS EXCLUSIVE MODE; SELECT 42"\): end that session \(SELECT pg_terminate_backend\(` + id + `\)\)`
			},
			readsWait: true,
		},
		{
			name: "mysql", env: "REDELIVER_TEST_MYSQL", driver: "mysql",
			holder: func(dsn string) string { return dsn },
			id:     "SELECT CONNECTION_ID()",
			hold:   []string{"BEGIN", "SELECT * FROM " + table + " FOR UPDATE"},
			reset:  "DELETE FROM " + table,
			held: func(id string) string {
				return `thread ` + id + ` \(user "[^"@]+@[^"]+", idle in a transaction\): end that session \(KILL ` + id + `\)`
			},
		},
	} {
		t.Run(db.name, func(t *testing.T) {
			dsn := os.Getenv(db.env)
			if dsn == "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s is not set under CI=true", db.env)
				}
				t.Skipf("set %s to run the lock tests", db.env)
			}
			kind, native, _, err := parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			setup(t, kind, dsn, table)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pool, err := sql.Open(db.driver, db.holder(native))
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			holder, err := pool.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			var id int64
			if err := holder.QueryRowContext(ctx, db.id).Scan(&id); err != nil {
				t.Fatal(err)
			}
			for _, q := range db.hold {
				if _, err := holder.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			defer holder.ExecContext(context.Background(), "ROLLBACK")
			for _, tt := range []struct {
				name  string
				run   func(d *DB) error
				what  string
				waits bool
			}{
				{"a reset", func(d *DB) error { return d.Reset(ctx) }, `the reset statement "` + db.reset + `"`, true},
				{"a read of the rows", func(d *DB) error { _, err := d.Rows(ctx, nil); return err }, `reading the effect rows`, db.readsWait},
				{"a read of a key's rows", func(d *DB) error { k := "O-1"; _, err := d.Rows(ctx, &k); return err }, `reading the effect rows of key O-1`, db.readsWait},
			} {
				t.Run(tt.name, func(t *testing.T) {
					d, err := Open(ctx, &scenario.Effects{DB: dsn, Table: table, Key: "order_id", Reset: []string{db.reset}})
					if err != nil {
						t.Fatal(err)
					}
					defer d.Close()
					d.lockWait = 300 * time.Millisecond
					start := time.Now()
					err = tt.run(d)
					if !tt.waits {
						if err != nil {
							t.Fatalf("got %v, want no wait", err)
						}
						return
					}
					var le *LockError
					if !errors.As(err, &le) {
						t.Fatalf("got %v, want a LockError", err)
					}
					want := regexp.QuoteMeta(tt.what) + ` waited more than 300ms for a lock on the effects database .*, held by ` + db.held(strconv.FormatInt(id, 10)) + ` or let it finish, then run again$`
					if !regexp.MustCompile(want).MatchString(err.Error()) {
						t.Errorf("got  %s\nwant %s", err, want)
					}
					// It gave up on its own, well before the test's context
					// of 30 s would have ended it.
					if took := time.Since(start); took > 20*time.Second {
						t.Errorf("gave up after %s", took)
					}
				})
			}
		})
	}
}
