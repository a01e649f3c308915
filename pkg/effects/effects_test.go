package effects

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// databases are the effects databases the tests read: a SQLite file always,
// PostgreSQL and MariaDB when their URLs are set (CI sets them).
func databases(t *testing.T) map[string]string {
	out := map[string]string{"sqlite": filepath.Join(t.TempDir(), "fx.db")}
	for name, env := range map[string]string{"postgres": "REDELIVER_TEST_POSTGRES", "mysql": "REDELIVER_TEST_MYSQL"} {
		if dsn := os.Getenv(env); dsn != "" {
			out[name] = dsn
			// The same database written the driver's own way: a libpq
			// keyword string, a Go MySQL DSN.
			if native := nativeForm(t, dsn); native != "" {
				out[name+"-native"] = native
			}
		} else if os.Getenv("CI") == "true" {
			t.Errorf("%s is not set under CI=true: the %s effects tests must run", env, name)
		} else {
			t.Logf("SKIP %s effects: set %s to run them", name, env)
		}
	}
	return out
}

// nativeForm writes a postgres:// or mysql:// URL the way its driver
// takes it without a URL.
func nativeForm(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	switch u.Scheme {
	case "postgres", "postgresql":
		s := fmt.Sprintf("host=%s dbname=%s user=%s", u.Hostname(), strings.TrimPrefix(u.Path, "/"), u.User.Username())
		if p := u.Port(); p != "" {
			s += " port=" + p
		}
		if m := u.Query().Get("sslmode"); m != "" {
			s += " sslmode=" + m
		}
		return s
	case "mysql":
		_, native, _, err := parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return native
	}
	return ""
}

// setup creates the test's own table through the driver, as a consumer would.
func setup(t *testing.T, kind, dsn, table string) {
	_, driverDSN, _, err := parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	driver := map[string]string{Postgres: "pgx", MySQL: "mysql", SQLite: "sqlite"}[kind]
	db, err := sql.Open(driver, driverDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, stmt := range []string{
		"DROP TABLE IF EXISTS " + table,
		"CREATE TABLE " + table + " (order_id VARCHAR(20), event_id VARCHAR(20), amount INTEGER)",
		"INSERT INTO " + table + " VALUES ('O-1', 'e-1', 10), ('O-1', 'e-2', 10), ('O-2', 'e-3', 5)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		db, _ := sql.Open(driver, driverDSN)
		db.Exec("DROP TABLE IF EXISTS " + table)
		db.Close()
	})
}

func TestEffects(t *testing.T) {
	ctx := context.Background()
	for name, dsn := range databases(t) {
		t.Run(name, func(t *testing.T) {
			kind, _, _, _ := parse(dsn)
			table := "redeliver_fx_test"
			setup(t, kind, dsn, table)
			spec := &scenario.Effects{DB: dsn, Table: table, Key: "order_id", Event: "event_id", Reset: []string{"DELETE FROM " + table + " WHERE order_id = 'O-2'"}}
			db, err := Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rows, err := db.Rows(ctx, nil)
			if err != nil || len(rows) != 3 {
				t.Fatalf("Rows = %v, %v; want 3 rows", rows, err)
			}
			key := "O-1"
			rows, err = db.Rows(ctx, &key)
			if err != nil || len(rows) != 2 || rows[0].Event != "e-1" || rows[1].Event != "e-2" {
				t.Fatalf("Rows(O-1) = %v, %v; want the rows of e-1 and e-2", rows, err)
			}
			if err := db.Reset(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := db.Count(ctx, table); err != nil || n != 2 {
				t.Errorf("Count after reset = %d, %v; want 2", n, err)
			}
			as := "key"
			if kind == MySQL {
				as = "`key`" // a reserved word there
			}
			q := &scenario.Effects{DB: dsn, Query: "SELECT order_id AS " + as + ", amount FROM " + table}
			qdb, err := Open(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			defer qdb.Close()
			if rows, err := qdb.Rows(ctx, &key); err != nil || len(rows) != 2 {
				t.Errorf("query Rows(O-1) = %v, %v; want 2", rows, err)
			}
			for _, bad := range []*scenario.Effects{
				{DB: dsn, Table: "redeliver_fx_missing", Key: "order_id"},
				{DB: dsn, Table: table, Key: "nope"},
				{DB: dsn, Query: "SELECT amount FROM " + table},
			} {
				bdb, err := Open(ctx, bad)
				if err != nil {
					t.Fatal(err)
				}
				_, err = bdb.Rows(ctx, nil)
				bdb.Close()
				var fe *Error
				if err == nil || !errorsAs(err, &fe) || strings.Contains(fe.Msg, "\n") {
					t.Errorf("Rows on %+v = %v; want one sentence", bad, err)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	for _, dsn := range []string{"postgres://postgres@127.0.0.1:1/test", "mysql://root@127.0.0.1:1/test"} {
		_, err := Open(context.Background(), &scenario.Effects{DB: dsn})
		if err == nil || !strings.HasPrefix(err.Error(), "cannot reach the effects database ") {
			t.Errorf("Open(%s) = %v; want cannot reach", dsn, err)
		}
	}
}

func errorsAs(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

// TestIgnoreColumns: a row's compared values leave out the columns
// ignore_columns names, whatever their case, and Columns names the rest; a
// column the table does not have is an error naming it and the columns.
func TestIgnoreColumns(t *testing.T) {
	ctx := context.Background()
	for name, dsn := range databases(t) {
		t.Run(name, func(t *testing.T) {
			kind, _, _, _ := parse(dsn)
			table := "redeliver_fx_ignore"
			setup(t, kind, dsn, table)
			key := "O-2"
			tests := []struct {
				ignore  []string
				columns string
				values  string
				err     string
			}{
				{nil, "order_id event_id amount", `["O-2","e-3","5"]`, ""},
				{[]string{"amount"}, "order_id event_id", `["O-2","e-3"]`, ""},
				{[]string{"AMOUNT", "event_id"}, "order_id", `["O-2"]`, ""},
				{[]string{"updatd_at"}, "", "", "has no column updatd_at, which ignore_columns names (it has order_id, event_id, amount)"},
			}
			for _, tt := range tests {
				db, err := Open(ctx, &scenario.Effects{DB: dsn, Table: table, Key: "order_id", Event: "event_id", IgnoreColumns: tt.ignore})
				if err != nil {
					t.Fatal(err)
				}
				checkErr := db.CheckIgnored(ctx)
				rows, err := db.Rows(ctx, &key)
				q, qerr := Open(ctx, &scenario.Effects{DB: dsn, Query: "SELECT order_id AS " + keyAs(kind) + ", event_id, amount FROM " + table, IgnoreColumns: tt.ignore})
				if qerr != nil {
					t.Fatal(qerr)
				}
				queryErr := q.CheckIgnored(ctx)
				q.Close()
				db.Close()
				if tt.err != "" {
					for _, e := range []error{checkErr, err} {
						if e == nil || !strings.Contains(e.Error(), tt.err) {
							t.Errorf("ignore %v: error %v, want one containing %q", tt.ignore, e, tt.err)
						}
					}
					if queryErr == nil || !strings.Contains(queryErr.Error(), "the effects query in ") || !strings.Contains(queryErr.Error(), "has no column updatd_at, which ignore_columns names (it returns key, event_id, amount)") {
						t.Errorf("ignore %v: the query's error %v", tt.ignore, queryErr)
					}
					continue
				}
				if checkErr != nil || queryErr != nil {
					t.Errorf("ignore %v: CheckIgnored = %v, %v", tt.ignore, checkErr, queryErr)
				}
				if err != nil || len(rows) != 1 {
					t.Fatalf("ignore %v: Rows = %v, %v", tt.ignore, rows, err)
				}
				if got := strings.Join(rows[0].Columns, " "); got != tt.columns || rows[0].Values != tt.values || rows[0].Event != "e-3" {
					t.Errorf("ignore %v: columns %q, values %s, event %q; want %q, %s, e-3", tt.ignore, got, rows[0].Values, rows[0].Event, tt.columns, tt.values)
				}
			}
		})
	}
}

// keyAs is the column name key, quoted where it is a reserved word.
func keyAs(kind string) string {
	if kind == MySQL {
		return "`key`"
	}
	return "key"
}

// TestQueryOnlyReads: a query that writes — a data-modifying CTE, a
// DELETE … RETURNING behind WITH, a function that deletes — is refused by
// the database itself, the error names the query's place in the file, and
// nothing is deleted.
func TestQueryOnlyReads(t *testing.T) {
	ctx := context.Background()
	for name, dsn := range databases(t) {
		t.Run(name, func(t *testing.T) {
			kind, driverDSN, _, _ := parse(dsn)
			table := "redeliver_fx_ro_test"
			setup(t, kind, dsn, table)
			var q string
			switch kind {
			case Postgres:
				q = "WITH d AS (DELETE FROM " + table + " RETURNING order_id) SELECT order_id AS key FROM d"
			case SQLite:
				q = "WITH d AS (SELECT 1) DELETE FROM " + table + " RETURNING order_id AS key"
			case MySQL:
				// MariaDB has no data-modifying CTE; a function that
				// deletes, called from a SELECT, writes just the same.
				db, err := sql.Open("mysql", driverDSN)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				for _, stmt := range []string{
					"DROP FUNCTION IF EXISTS redeliver_fx_wipe",
					"CREATE FUNCTION redeliver_fx_wipe() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM " + table + "; RETURN 1; END",
				} {
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
				t.Cleanup(func() { db.Exec("DROP FUNCTION IF EXISTS redeliver_fx_wipe") })
				q = "SELECT 'O-1' AS `key`, redeliver_fx_wipe() AS w"
			}
			spec := &scenario.Effects{DB: dsn, Query: q, QueryPos: scenario.Pos{File: "f.yaml", Line: 12, Col: 10}, IgnoreColumns: []string{"w"}}
			db, err := Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// Reading the query's columns before the first delivery is
			// read-only too; whatever it says, it deletes nothing.
			_ = db.CheckIgnored(ctx)
			rows, err := db.Rows(ctx, nil)
			if err == nil {
				t.Errorf("the query ran and returned %d rows; want the database's refusal", len(rows))
			} else if want := "the effects query (f.yaml:12:10) must only read, and "; !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Rows = %v; want one sentence starting %q", err, want)
			}
			// The table is read as the consumer's, outside the query.
			tdb, err := Open(ctx, &scenario.Effects{DB: dsn, Table: table, Key: "order_id"})
			if err != nil {
				t.Fatal(err)
			}
			defer tdb.Close()
			if n, err := tdb.Count(ctx, table); err != nil || n != 3 {
				t.Errorf("after the query, Count = %d, %v; want the 3 rows untouched", n, err)
			}
		})
	}
}

// TestResetRefusedAway: Reset itself refuses a database away from this
// machine that allow_reset does not name, before connecting.
func TestResetRefusedAway(t *testing.T) {
	t.Setenv("PGHOST", "")
	d := &DB{dl: postgresDialect{}, where: "db.example.com:5432/prod", spec: &scenario.Effects{
		DB: "postgres://app:s3cret@db.example.com:5432/prod", Reset: []string{"DELETE FROM payments"},
		ResetPos: scenario.Pos{File: "f.yaml", Line: 6, Col: 3},
	}}
	err := d.Reset(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:6:3: reset would empty the PostgreSQL database at db.example.com:5432/prod") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Reset = %v; want the refusal naming reset's place and the host", err)
	}
}

func TestDescribeNamesNoUser(t *testing.T) {
	t.Setenv("PGHOST", "")
	for dsn, want := range map[string]string{
		"postgres://app:s3cret@127.0.0.1:5432/test": "PostgreSQL 127.0.0.1:5432/test",
		"mysql://root:s3cret@127.0.0.1:3306/test":   "MySQL 127.0.0.1:3306/test",
		"effects.db": "SQLite file effects.db",
	} {
		if got := Describe(dsn); got != want {
			t.Errorf("Describe(%q) = %q; want %q", dsn, got, want)
		}
	}
}

// TestCheckReset: reset runs on this machine or a one-label service
// host; anywhere else only with allow_reset, and the refusal names
// reset's place and the host, never a password. Nothing is dialled.
func TestCheckReset(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGSERVICE", "PGSERVICEFILE", "PGPASSFILE"} {
		t.Setenv(v, "")
	}
	file := func(db, extra string) string {
		return "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:1/e\"}\neffects:\n  db: \"" + db + "\"\n  reset: [\"DELETE FROM payments\"]\n" + extra +
			"  table: payments\n  key: order_id\n  key_of: \"{data.orderId}\"\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	}
	tests := []struct {
		name, db, extra, env, want string // want "" when the file loads
	}{
		{name: "SQLite file", db: "effects.db"},
		{name: "loopback", db: "postgres://postgres@127.0.0.1:5432/test"},
		{name: "loopback v6", db: "postgres://postgres@[::1]:5432/test"},
		{name: "localhost", db: "mysql://root@localhost:3306/test"},
		{name: "unix socket", db: "postgres://postgres@/test?host=/var/run/postgresql"},
		{name: "CI service", db: "postgres://postgres:postgres@postgres:5432/test"},
		{name: "compose service", db: "mysql://root@db/test"},
		{name: "default used", db: "${REDELIVER_TEST_URL:-postgres://postgres@127.0.0.1:5432/test}"},
		{name: "environment points elsewhere", db: "${REDELIVER_TEST_URL:-postgres://postgres@127.0.0.1:5432/test}", env: "postgres://app:s3cret@db.example.com:5432/prod",
			want: "f.yaml:6:3: reset would empty the PostgreSQL database at db.example.com:5432/prod, and db.example.com is neither this machine nor a one-label service host such as postgres; if that database is meant to be emptied, add allow_reset: [db.example.com] to effects"},
		{name: "private IP", db: "mysql://root:s3cret@10.0.0.5:3306/prod",
			want: "f.yaml:6:3: reset would empty the MySQL database at 10.0.0.5:3306/prod, and 10.0.0.5 is neither"},
		{name: "allowed", db: "postgres://app:s3cret@db.example.com:5432/ci", extra: "  allow_reset: [db.example.com]\n"},
		{name: "allowed from the environment", db: "${REDELIVER_TEST_URL}", env: "postgres://app@10.0.0.5/ci", extra: "  allow_reset: [\"${REDELIVER_TEST_ALLOW:-10.0.0.5}\"]\n"},
		{name: "another host allowed", db: "postgres://app@10.0.0.5/ci", extra: "  allow_reset: [10.0.0.6]\n", want: "f.yaml:6:3: reset would empty the PostgreSQL database at 10.0.0.5:5432/ci"},
		{name: "a URL pgx cannot use", db: "postgres://app:s3cret@db.example.com/x?port=abc", want: "f.yaml:5:7: db is not a PostgreSQL URL pgx can use: cannot parse `postgres://app:xxxxx@db.example.com/x?port=abc`: invalid port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDELIVER_TEST_URL", tt.env)
			s, err := scenario.Load("f.yaml", []byte(file(tt.db, tt.extra)))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			perr := CheckReset(s.Effects)
			if tt.want == "" {
				if perr != nil {
					t.Fatalf("CheckReset refused the file: %v", perr)
				}
				return
			}
			if perr == nil {
				t.Fatalf("CheckReset accepted the file; want %q", tt.want)
			}
			if strings.Contains(perr.Error(), "s3cret") || strings.Contains(perr.Error(), "app@") {
				t.Errorf("the error names the user or password: %v", perr)
			}
			if !strings.HasPrefix(perr.Error(), tt.want) || perr.Kind != problem.InvalidInput {
				t.Errorf("CheckReset = %v (%v); want invalid input starting %q", perr, perr.Kind, tt.want)
			}
		})
	}
}

// TestQueryReadsOnlyTheKey: the rows of one key are read through the
// effects query filtered by that key, not by reading every row the query
// returns: a row of another key that cannot be read (its expression fails)
// does not stop the read, while the whole query does fail on it. A query
// with a closing semicolon is filtered too.
func TestQueryReadsOnlyTheKey(t *testing.T) {
	ctx := context.Background()
	// Where a row's expression fails when it is evaluated: only on the
	// row of O-2.
	fails := map[string]string{
		SQLite:   "json(CASE WHEN order_id = 'O-2' THEN 'not json' ELSE '1' END)",
		Postgres: "1 / (CASE WHEN order_id = 'O-2' THEN 0 ELSE 1 END)",
	}
	for name, dsn := range databases(t) {
		kind, _, _, _ := parse(dsn)
		if fails[kind] == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			table := "redeliver_fx_keyed"
			setup(t, kind, dsn, table)
			for _, end := range []string{"", ";", " ;\n"} {
				db, err := Open(ctx, &scenario.Effects{DB: dsn, Query: "SELECT order_id AS key, event_id, " + fails[kind] + " AS f FROM " + table + end})
				if err != nil {
					t.Fatal(err)
				}
				key := "O-1"
				rows, err := db.Rows(ctx, &key)
				if err != nil || len(rows) != 2 || rows[0].Key != "O-1" || rows[1].Key != "O-1" {
					t.Errorf("query%q Rows(O-1) = %v, %v; want the 2 rows of O-1, read without the row of O-2", end, rows, err)
				}
				if _, err := db.Rows(ctx, nil); err == nil {
					t.Errorf("query%q Rows() read the row of O-2, which cannot be read", end)
				}
				db.Close()
			}
		})
	}
}

// TestKeyReadPreparedOnce: on SQLite, the read of one key's rows, which a
// replay makes twice per redelivery, is prepared once and then only run;
// a read that failed (the table not there yet) is not kept, and a column
// the consumer adds is read all the same.
func TestKeyReadPreparedOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fx.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, tt := range []struct {
		name string
		spec scenario.Effects
	}{
		{"table", scenario.Effects{DB: path, Table: "pay", Key: "order_id", Event: "event_id"}},
		{"query", scenario.Effects{DB: path, Query: "SELECT order_id AS key, event_id AS event, amount FROM pay"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := raw.Exec(`DROP TABLE IF EXISTS pay`); err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, &tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			key := "O-1"
			if _, err := db.Rows(ctx, &key); err == nil {
				t.Fatal("Rows read a table that is not there")
			}
			if _, err := raw.Exec(`CREATE TABLE pay (order_id TEXT, event_id TEXT, amount INTEGER);
				INSERT INTO pay VALUES ('O-1', 'e1', 5), ('O-2', 'e2', 7)`); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				for _, k := range []string{"O-1", "O-2"} {
					rows, err := db.Rows(ctx, &k)
					if err != nil || len(rows) != 1 || rows[0].Key != k {
						t.Fatalf("Rows(%s) = %v, %v; want its one row", k, rows, err)
					}
				}
			}
			lite := db.s.(*liteSession)
			on := lite.db
			if tt.spec.Query != "" {
				on = lite.ro
			}
			if n := len(lite.stmts[on]); n != 1 {
				t.Errorf("%d statements prepared for the key's rows, want 1", n)
			}
			if tt.spec.Table != "" {
				if _, err := raw.Exec(`ALTER TABLE pay ADD COLUMN note TEXT; UPDATE pay SET note = 'x'`); err != nil {
					t.Fatal(err)
				}
				rows, err := db.Rows(ctx, &key)
				if err != nil || len(rows) != 1 || !strings.Contains(rows[0].Values, `"x"`) {
					t.Errorf("after a column was added, Rows(O-1) = %v, %v; want the row with its new column", rows, err)
				}
			}
		})
	}
}

// TestCheckProxy: proxy: true only where the proxy can stand between the
// consumer and its database — PostgreSQL over TCP without TLS — and one
// sentence, at proxy's place, everywhere else.
func TestCheckProxy(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGSERVICE", "PGSERVICEFILE", "PGPASSFILE", "PGSSLMODE"} {
		t.Setenv(v, "")
	}
	tests := []struct{ name, db, want string }{
		{"PostgreSQL", "postgres://postgres@127.0.0.1:5432/test", ""},
		{"PostgreSQL keywords", "host=127.0.0.1 port=5432 dbname=test user=postgres", ""},
		{"sslmode disable", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", ""},
		{"MySQL", "mysql://root@127.0.0.1:3306/test", ""},
		{"MySQL DSN", "root@tcp(127.0.0.1:3306)/test", ""},
		{"MySQL TLS preferred", "mysql://root@127.0.0.1:3306/test?tls=preferred", ""},
		{"MySQL TLS required", "mysql://root@127.0.0.1:3306/test?tls=true", "f.yaml:5:3: proxy: true relays plain TCP, and db asks for tls=true"},
		{"MySQL DSN TLS", "root@tcp(db:3306)/test?tls=skip-verify", "f.yaml:5:3: proxy: true relays plain TCP, and db asks for tls=skip-verify"},
		{"MySQL unix socket", "root@unix(/run/mysqld/mysqld.sock)/test", "f.yaml:5:3: proxy: true relays TCP connections, and db is reached over a unix socket"},
		{"SQLite", "effects.db", "f.yaml:5:3: proxy: true relays the PostgreSQL and MySQL wire protocols, and db is a SQLite file"},
		{"unix socket", "postgres://postgres@/test?host=/var/run/postgresql", "f.yaml:5:3: proxy: true relays TCP connections, and db is reached over a unix socket"},
		{"TLS required", "postgres://postgres@127.0.0.1:5432/test?sslmode=require", "f.yaml:5:3: proxy: true relays plain TCP, and db asks for sslmode=require"},
		{"TLS verified", "host=db port=5432 sslmode=verify-full", "f.yaml:5:3: proxy: true relays plain TCP, and db asks for sslmode=verify-full"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\ntarget:\n  exec: {command: [a]}\neffects:\n  proxy: true\n  db: \"" + tt.db + "\"\n  table: payments\n  key: order_id\n  key_of: \"{data.orderId}\"\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
			s, err := scenario.Load("f.yaml", []byte(src))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := ""
			if e := Check(s.Effects); e != nil {
				got = e.Error()
			}
			if tt.want == "" && got != "" || tt.want != "" && !strings.HasPrefix(got, tt.want) {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestJDBCURL: ${REDELIVER_JDBC_URL} is effects.db as PgJDBC reads it,
// through the proxy: user and password as parameters, the search_path as
// currentSchema, however effects.db gives it.
func TestJDBCURL(t *testing.T) {
	t.Setenv("PGPASSWORD", "")
	t.Setenv("PGPASSFILE", "/nonexistent")
	tests := []struct{ dsn, want string }{
		{"postgres://app:p%40ss@db.example.com:5433/shop?sslmode=prefer", "jdbc:postgresql://127.0.0.1:40000/shop?password=p%40ss&sslmode=disable&user=app"},
		{"postgres://app@db/shop?search_path=billing", "jdbc:postgresql://127.0.0.1:40000/shop?currentSchema=billing&sslmode=disable&user=app"},
		{"postgres://app@db/shop?options=-csearch_path%3Dbilling", "jdbc:postgresql://127.0.0.1:40000/shop?currentSchema=billing&sslmode=disable&user=app"},
		{"host=db port=5433 dbname=shop user=app password='s 3' options='-c search_path=a,b'", "jdbc:postgresql://127.0.0.1:40000/shop?currentSchema=a%2Cb&password=s+3&sslmode=disable&user=app"},
		{"postgres://app@db", "jdbc:postgresql://127.0.0.1:40000/app?sslmode=disable&user=app"},
		{"mysql://app:p%40ss@db:3307/shop", "jdbc:mysql://127.0.0.1:40000/shop?allowPublicKeyRetrieval=true&password=p%40ss&sslMode=DISABLED&user=app"},
		{"app@tcp(db)/shop", "jdbc:mysql://127.0.0.1:40000/shop?allowPublicKeyRetrieval=true&sslMode=DISABLED&user=app"},
	}
	for _, tt := range tests {
		got, err := JDBCURL(tt.dsn, "127.0.0.1:40000")
		if err != nil || got != tt.want {
			t.Errorf("JDBCURL(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
		}
	}
}

func TestProxyURL(t *testing.T) {
	tests := []struct{ dsn, want string }{
		{"postgres://app:pw@db.example.com:5433/shop?application_name=x", "postgres://app:pw@127.0.0.1:40000/shop?application_name=x&sslmode=disable"},
		{"postgres://app@db/shop?sslmode=prefer", "postgres://app@127.0.0.1:40000/shop?sslmode=disable"},
		{"host=db port=5433 dbname=shop user=app sslmode=prefer", "dbname=shop user=app host=127.0.0.1 port=40000 sslmode=disable"},
		{"mysql://app:pw@db.example.com:3307/shop?parseTime=true", "mysql://app:pw@127.0.0.1:40000/shop?parseTime=true"},
		{"mysql://root@db/shop", "mysql://root@127.0.0.1:40000/shop"},
		{"app:pw@tcp(db.example.com:3307)/shop?parseTime=true", "app:pw@tcp(127.0.0.1:40000)/shop?parseTime=true"},
	}
	for _, tt := range tests {
		got, err := ProxyURL(tt.dsn, "127.0.0.1:40000")
		if err != nil || got != tt.want {
			t.Errorf("ProxyURL(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
		}
	}
}

// parse is a connection string as the tests use it: its kind, the DSN
// its driver opens (a SQLite file's absolute path), and where it is.
func parse(dsn string) (kind, native, where string, err error) {
	p, err := Parse(dsn)
	if err != nil {
		return "", "", "", err
	}
	native = dsn
	switch p.Kind {
	case MySQL:
		native, err = mysqlDriverDSN(dsn)
	case SQLite:
		native, err = filepath.Abs(p.Name)
	}
	return p.Kind, native, whereOf(p), err
}
