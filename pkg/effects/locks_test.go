package effects

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestWaitOnALockIsNamed: a reset statement or a read that waits on a
// lock another session holds gives up after the lock wait with one
// sentence naming that session's pid, application name, state and query,
// instead of waiting without a word.
func TestWaitOnALockIsNamed(t *testing.T) {
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("set REDELIVER_TEST_POSTGRES to run the lock tests")
	}
	table := "fx_locked"
	setup(t, Postgres, dsn, table)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "lock holder"
	holder, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(context.Background())
	if _, err := holder.Exec(ctx, "BEGIN; LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE; SELECT 42"); err != nil {
		t.Fatal(err)
	}
	defer holder.Exec(context.Background(), "ROLLBACK")
	pid := holder.PgConn().PID()
	tests := []struct {
		name string
		run  func(d *DB) error
		what string
	}{
		{"a reset", func(d *DB) error { return d.Reset(ctx) }, `the reset statement "TRUNCATE fx_locked"`},
		{"a read of the rows", func(d *DB) error { _, err := d.Rows(ctx, nil); return err }, `reading the effect rows`},
		{"a read of a key's rows", func(d *DB) error { k := "O-1"; _, err := d.Rows(ctx, &k); return err }, `reading the effect rows of key O-1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Open(ctx, &scenario.Effects{DB: dsn, Table: table, Key: "order_id", Reset: []string{"TRUNCATE " + table}})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			d.lockWait = 300 * time.Millisecond
			start := time.Now()
			err = tt.run(d)
			var le *LockError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a LockError", err)
			}
			want := regexp.QuoteMeta(tt.what) + ` waited more than 300ms for a lock on the effects database .*, held by backend ` +
				regexp.QuoteMeta(itoa(pid)) + ` \(application "lock holder", idle in transaction, whose last query was "BEGIN; LOCK TABLE fx_locked IN ACCESS EXCLUSIVE MODE; SELECT 42"\): end that session \(SELECT pg_terminate_backend\(` + itoa(pid) + `\)\) or let it finish, then run again$`
			if !regexp.MustCompile(want).MatchString(err.Error()) {
				t.Errorf("got  %s\nwant %s", err, want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("gave up after %s", took)
			}
		})
	}
}

func itoa(n uint32) string { return strconv.Itoa(int(n)) }
