package postgres

import (
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

// testDSN returns the server the tests may use, or skips.
func testDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("no PostgreSQL to test against: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable (any database the user may create schemas in)")
	}
	return dsn
}

func connect(t *testing.T, keep bool) *Server {
	t.Helper()
	srv, err := Connect(context.Background(), testDSN(t), keep)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestIsDSN(t *testing.T) {
	tests := []struct {
		db   string
		want bool
	}{
		{"postgres://u@h/db", true},
		{"postgresql://u@h:5432/db?sslmode=disable", true},
		{":memory:", false},
		{"run.db", false},
		{"postgres.db", false},
		{"dbs/", false},
	}
	for _, tt := range tests {
		if got := IsDSN(tt.db); got != tt.want {
			t.Errorf("IsDSN(%q) = %v, want %v", tt.db, got, tt.want)
		}
	}
}

// TestConnectErrors needs no server: each bad --db gets one sentence.
func TestConnectErrors(t *testing.T) {
	tests := []struct {
		name, dsn, want string
	}{
		{"nothing listening", "postgres://nobody@127.0.0.1:1/x?connect_timeout=5", "cannot reach PostgreSQL at nobody@127.0.0.1:1/x (connect: connection refused); is the server running, and is --db right?"},
		{"not a URL", "postgres://u:p@[::1:5432/d", "--db is not a PostgreSQL URL redeliver can use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Connect(context.Background(), tt.dsn, false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Connect: %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Connect: %q is more than one line", err)
			}
		})
	}
}

func TestConnectRefused(t *testing.T) {
	u, err := url.Parse(testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(u *url.URL)
		want string
	}{
		{"no such database", func(u *url.URL) { u.Path = "/redeliver_no_such_database" }, `has no database "redeliver_no_such_database"; create it or name another in --db`},
		{"no such user", func(u *url.URL) { u.User = url.User("redeliver_no_such_user") }, "refused the login"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := *u
			tt.edit(&v)
			_, err := Connect(context.Background(), v.String(), false)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Connect: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func schemaExists(t *testing.T, srv *Server, name string) bool {
	t.Helper()
	var n int
	if err := srv.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestSchemaDroppedOrKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		srv := connect(t, keep)
		d, err := srv.Create(context.Background(), handler.Config{Strategy: handler.EventID, Effect: "shipments"})
		if err != nil {
			t.Fatal(err)
		}
		if !schemaExists(t, srv, d.Schema()) {
			t.Fatalf("schema %s was not created", d.Schema())
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if got := schemaExists(t, srv, d.Schema()); got != keep {
			t.Errorf("keep=%v: schema exists after Close = %v, want %v", keep, got, keep)
		}
		if keep {
			if k := srv.Kept(); len(k) != 1 || k[0] != d.Schema() {
				t.Errorf("Kept() = %v, want [%s]", k, d.Schema())
			}
			srv.pool.Exec(context.Background(), `DROP SCHEMA "`+d.Schema()+`" CASCADE`)
		}
	}
}

// TestConstraints checks the constraints per strategy, as on SQLite: the
// safe strategies refuse a second marker and a second effect with
// handler.ErrUnique, the unsafe ones accept what they have no key for.
func TestConstraints(t *testing.T) {
	srv := connect(t, false)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		strategy                   handler.Strategy
		markerUnique, effectUnique bool
		keyUnique                  bool
	}{
		{handler.EventID, true, true, false},
		{handler.ConsumerScoped, true, true, false},
		{handler.BusinessKey, true, true, true},
		{handler.ExternalKey, true, true, true},
		{handler.None, true, false, false},
		{handler.CheckThenAct, false, false, false},
		{handler.MarkerAfterEffect, true, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			ctx := context.Background()
			d, err := srv.Create(ctx, handler.Config{Strategy: tt.strategy, Effect: "effects"})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			try := func(do func(tx handler.Tx) error) bool {
				tx, err := d.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				err = do(tx)
				if err != nil {
					tx.Rollback()
					if !errors.Is(err, handler.ErrUnique) {
						t.Fatalf("got %v, want nil or handler.ErrUnique", err)
					}
					return true
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				return false
			}
			marker := func(tx handler.Tx) error {
				return tx.InsertMarker(ctx, handler.Marker{EventID: "evt-1", Consumer: "c", Identity: "{}", At: at})
			}
			effect := func(ev, key string) func(tx handler.Tx) error {
				return func(tx handler.Tx) error {
					_, err := tx.InsertEffect(ctx, handler.Effect{EventID: ev, Consumer: "c", BusinessKey: key, Payload: "{}", At: at})
					return err
				}
			}
			try(marker)
			if got := try(marker); got != tt.markerUnique {
				t.Errorf("second marker refused = %v, want %v", got, tt.markerUnique)
			}
			try(effect("evt-1", "k1"))
			if got := try(effect("evt-1", "k2")); got != tt.effectUnique {
				t.Errorf("second effect of one event refused = %v, want %v", got, tt.effectUnique)
			}
			if got := try(effect("evt-2", "k1")); got != tt.keyUnique {
				t.Errorf("second effect of one business key refused = %v, want %v", got, tt.keyUnique)
			}
			tx, _ := d.Begin(ctx)
			defer tx.Rollback()
			m, found, err := tx.Marker(ctx, "evt-1", "c")
			if err != nil || !found || !m.At.Equal(at) {
				t.Errorf("Marker = %+v, %v, %v; want the marker written at %s", m, found, err, at)
			}
		})
	}
}

// TestNoRightToCreateSchema: a user who may not create schemas gets one
// sentence saying so and what to do.
func TestNoRightToCreateSchema(t *testing.T) {
	admin := connect(t, false)
	ctx := context.Background()
	const role = "redeliver_test_no_create"
	if _, err := admin.pool.Exec(ctx, `DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '`+role+`') THEN CREATE ROLE `+role+` LOGIN; END IF; END $$`); err != nil {
		t.Skipf("cannot create a test role here (%v)", err)
	}
	// Cleanups run after the deferred Close of the role's pool below.
	t.Cleanup(func() { admin.pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) })
	u, _ := url.Parse(testDSN(t))
	u.User = url.User(role)
	srv, err := Connect(ctx, u.String(), false)
	if err != nil {
		t.Skipf("the test role cannot log in here (%v)", err)
	}
	defer srv.Close()
	_, err = srv.Create(ctx, handler.Config{Strategy: handler.EventID, Effect: "effects"})
	want := "user " + role + " may not create a schema in database " + admin.db + "; grant it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Create: %v, want an error containing %q", err, want)
	}
}

// TestReset: an emptied schema is as fresh as a new one, effect ids
// starting again at 1.
func TestReset(t *testing.T) {
	srv := connect(t, false)
	ctx := context.Background()
	d, err := srv.Create(ctx, handler.Config{Strategy: handler.EventID, Effect: "effects"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	write := func() int64 {
		tx, err := d.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := tx.InsertMarker(ctx, handler.Marker{EventID: "evt-1", Consumer: "c", Identity: "{}", At: at}); err != nil {
			t.Fatal(err)
		}
		id, err := tx.InsertEffect(ctx, handler.Effect{EventID: "evt-1", Consumer: "c", Payload: "{}", At: at})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for round := 1; round <= 2; round++ {
		if id := write(); id != 1 {
			t.Errorf("round %d: first effect id %d, want 1", round, id)
		}
		if err := d.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"processed", "effects"} {
			if n, err := d.Count(ctx, table); err != nil || n != 0 {
				t.Errorf("round %d: %s has %d rows after Reset (%v), want 0", round, table, n, err)
			}
		}
	}
}
