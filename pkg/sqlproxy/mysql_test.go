package sqlproxy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
)

func init() {
	// The driver logs each connection the tests cut.
	mysql.SetLogger(log.New(io.Discard, "", 0))
}

// mysqlServer is the MySQL or MariaDB the tests relay to
// (REDELIVER_TEST_MYSQL, a mysql:// URL), as a driver configuration.
func mysqlServer(t *testing.T) *mysql.Config {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_MYSQL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDELIVER_TEST_MYSQL is not set under CI=true: the MySQL proxy tests must run")
		}
		t.Skip("set REDELIVER_TEST_MYSQL=mysql://USER@HOST:PORT/DB to run the MySQL proxy tests")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", u.Host
	if u.Port() == "" {
		cfg.Addr += ":3306"
	}
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	return cfg
}

// mysqlThrough starts a proxy to the test server and returns it with a
// configuration that reaches the server through it.
func mysqlThrough(t *testing.T) (*Proxy, *mysql.Config) {
	t.Helper()
	cfg := mysqlServer(t)
	p, err := ListenMySQL(cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	via := cfg.Clone()
	via.Addr = p.Addr()
	return p, via
}

// mysqlHeldSetup is a proxy, a connection straight to the server
// (admin), a new table, and a connection through the proxy in the text
// protocol or, with binary, the binary one.
func mysqlHeldSetup(t *testing.T, binary bool) (p *Proxy, admin *sql.DB, tbl string, db *sql.DB) {
	t.Helper()
	p, cfg := mysqlThrough(t)
	cfg.InterpolateParams = !binary
	admin = mysqlOpen(t, mysqlServer(t))
	return p, admin, mysqlTable(t, admin), mysqlOpen(t, cfg)
}

// mysqlOpen opens a pool of one connection: a test's statements all go
// on it, in order.
func mysqlOpen(t *testing.T, cfg *mysql.Config) *sql.DB {
	t.Helper()
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	return db
}

// mysqlTable makes a table of its own for one test.
func mysqlTable(t *testing.T, admin *sql.DB) string {
	t.Helper()
	name := "myproxy_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_", "-", "_").Replace(t.Name()))
	if len(name) > 64 {
		name = name[:64]
	}
	for _, q := range []string{"DROP TABLE IF EXISTS " + name, "CREATE TABLE " + name + " (k VARCHAR(40) PRIMARY KEY, n INT) ENGINE=InnoDB"} {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { admin.Exec("DROP TABLE IF EXISTS " + name) })
	return name
}

func mysqlCount(t *testing.T, admin *sql.DB, tbl string) int {
	t.Helper()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM " + tbl).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func traceLines(stmts []Statement) string {
	var lines []string
	for _, st := range stmts {
		lines = append(lines, fmt.Sprintf("%d %s → %s", st.Index, Words(st.Text), st.Answer))
	}
	return strings.Join(lines, "\n")
}

// TestMySQLTrace: through the proxy, with go-sql-driver/mysql, the text
// protocol (interpolateParams) and the binary one (prepared statements)
// each give the same trace: a query, a transaction, an error; the
// execute is shown with the text its prepare sent.
func TestMySQLTrace(t *testing.T) {
	for _, binary := range []bool{false, true} {
		t.Run(map[bool]string{false: "text", true: "binary"}[binary], func(t *testing.T) {
			p, cfg := mysqlThrough(t)
			cfg.InterpolateParams = !binary
			db := mysqlOpen(t, cfg)
			tbl := mysqlTable(t, db)
			w, err := p.Watch(nil)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRow("SELECT count(*) FROM "+tbl+" WHERE k = ?", "a").Scan(&n); err != nil {
				t.Fatal(err)
			}
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 1)", "a"); err != nil {
				t.Fatal(err)
			}
			var me *mysql.MySQLError
			if _, err := tx.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 1)", "a"); !errors.As(err, &me) || me.Number != 1062 {
				t.Fatalf("the duplicate insert: %v", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			got := w.Stop()
			text := "select count(*) from " + tbl + " where k = 'a'"
			ins := "insert into " + tbl + " (k, n) values ('a', 1)"
			if binary {
				text = "select count(*) from " + tbl + " where k = ?"
				ins = "insert into " + tbl + " (k, n) values (?, 1)"
			}
			want := strings.Join([]string{
				"1 " + text + " → SELECT 1",
				"2 start transaction → OK",
				"3 " + ins + " → INSERT 1",
				"4 " + ins + " → ERROR 1062",
				"5 rollback → OK",
			}, "\n")
			if g := traceLines(got); g != want {
				t.Fatalf("trace:\n%s\nwant:\n%s", g, want)
			}
			if binary && (!got[2].Extended || got[2].Name == "") {
				t.Errorf("the execute is not marked as a prepared statement's: %+v", got[2])
			}
		})
	}
}

// TestMySQLHoldAndCut: a connection held at a boundary and cut there
// leaves the database as the boundary says, in both protocols; the
// server rolls back what the cut connection left open.
func TestMySQLHoldAndCut(t *testing.T) {
	tests := []struct {
		name string
		at   Boundary
		rows int
	}{
		{"before the insert", Boundary{Words: "INSERT  into"}, 0},
		{"after the insert", Boundary{Words: "insert into", After: true}, 0},
		{"before the commit", Boundary{Words: "commit"}, 0},
		{"after the commit", Boundary{Words: "commit", After: true}, 1},
		{"before statement 2", Boundary{Index: 2}, 0},
		{"after statement 3", Boundary{Index: 3, After: true}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, binary := range []bool{false, true} {
				p, admin, tbl, db := mysqlHeldSetup(t, binary)
				w, err := p.Watch(&tt.at)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					tx, err := db.Begin()
					if err == nil {
						_, err = tx.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 1)", "a")
					}
					if err == nil {
						err = tx.Commit()
					}
					done <- err
				}()
				heldOrFail(t, w, done, tt.name)
				if !w.InTransaction() && strings.Contains(tt.name, "insert") {
					t.Errorf("binary %v: held inside the transaction, InTransaction says no", binary)
				}
				w.Cut()
				if err := <-done; err == nil {
					t.Fatalf("binary %v: the transaction succeeded through a cut connection", binary)
				}
				w.Stop()
				// The server notices the closed connection and rolls back.
				deadline := time.Now().Add(5 * time.Second)
				n := mysqlCount(t, admin, tbl)
				for n != tt.rows && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					n = mysqlCount(t, admin, tbl)
				}
				if n != tt.rows {
					t.Fatalf("binary %v: %d rows after the cut at %s, want %d", binary, n, tt.at, tt.rows)
				}
			}
		})
	}
}

// TestMySQLAfterAutocommitIsCommitted: held after a statement that
// commits on its own, its effect is committed, as the consumer would
// find it on seeing the answer, and a kill there keeps it.
func TestMySQLAfterAutocommitIsCommitted(t *testing.T) {
	for _, binary := range []bool{false, true} {
		p, admin, tbl, db := mysqlHeldSetup(t, binary)
		w, err := p.Watch(&Boundary{Index: 1, After: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := db.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 1)", "payment")
			if err == nil {
				_, err = db.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 2)", "marker")
			}
			done <- err
		}()
		heldOrFail(t, w, done, "autocommit")
		if w.InTransaction() {
			t.Errorf("binary %v: held after an autocommitted insert, InTransaction says yes", binary)
		}
		if n := mysqlCount(t, admin, tbl); n != 1 {
			t.Errorf("binary %v: held after the autocommitted insert, %d rows are committed, want 1", binary, n)
		}
		w.Cut()
		if err := <-done; err == nil {
			t.Fatal("the second insert went through a cut connection")
		}
		w.Stop()
		if n := mysqlCount(t, admin, tbl); n != 1 {
			t.Errorf("binary %v: killed after the autocommitted insert, %d rows are left, want 1", binary, n)
		}
	}
}

// TestMySQLMultiStatement: a query of several statements is counted
// statement by statement, each with the answer of its own result; only
// before its first and after its last can it be held; an error stops
// the rest.
func TestMySQLMultiStatement(t *testing.T) {
	p, cfg := mysqlThrough(t)
	cfg.MultiStatements = true
	db := mysqlOpen(t, cfg)
	tbl := mysqlTable(t, db)
	w, err := p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO " + tbl + " VALUES ('a', 1); UPDATE " + tbl + " SET n = 2 -- a comment; not a statement\n; DELETE FROM " + tbl + " WHERE k = 'none'"); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT k FROM " + tbl + "; SELECT 'x;y', `k;` FROM (SELECT 1 AS `k;`) s")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.NextResultSet()
	for rows.Next() {
	}
	rows.Close()
	if _, err := db.Exec("INSERT INTO " + tbl + " VALUES ('a', 1); INSERT INTO " + tbl + " VALUES ('b', 1)"); err == nil {
		t.Fatal("the duplicate key went through")
	}
	got := w.Stop()
	want := strings.Join([]string{
		"1 insert into " + tbl + " values ('a', 1) → INSERT 1",
		"2 update " + tbl + " set n = 2 -- a comment; not a statement → UPDATE 1",
		"3 delete from " + tbl + " where k = 'none' → DELETE 0",
		"4 select k from " + tbl + " → SELECT 1",
		"5 select 'x;y', `k;` from (select 1 as `k;`) s → SELECT 1",
		"6 insert into " + tbl + " values ('a', 1) → ERROR 1062",
		"7 insert into " + tbl + " values ('b', 1) → not run (an earlier error)",
	}, "\n")
	if g := traceLines(got); g != want {
		t.Fatalf("trace:\n%s\nwant:\n%s", g, want)
	}
	if got[0].Parts != 3 || got[1].Holdable(false) || !got[2].Holdable(true) {
		t.Errorf("parts: %+v", got[:3])
	}
	if n := mysqlCount(t, db, tbl); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

// TestMySQLKillQueryReachesTheServer: a KILL QUERY sent on another
// connection through the proxy ends the statement the first one runs.
func TestMySQLKillQueryReachesTheServer(t *testing.T) {
	_, cfg := mysqlThrough(t)
	a, b := mysqlOpen(t, cfg), mysqlOpen(t, cfg)
	var id int64
	if err := a.QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var n int
		done <- a.QueryRow("SELECT SLEEP(30)").Scan(&n)
	}()
	// Wait for the sleep to be running, as the server sees it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var state sql.NullString
		err := b.QueryRow("SELECT state FROM information_schema.processlist WHERE id = ?", id).Scan(&state)
		if err == nil && state.String == "User sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleep never ran (%v)", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if _, err := b.Exec(fmt.Sprintf("KILL QUERY %d", id)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		// SLEEP interrupted returns 1 (MySQL) or an error (MariaDB).
	case <-time.After(20 * time.Second):
		t.Fatal("the KILL QUERY did not reach the server: the sleep ran on")
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the sleep ended after %s", d)
	}
}

// TestMySQLBackends: the proxy knows each connection's server thread, as
// CONNECTION_ID() says, and whether its client is still connected.
func TestMySQLBackends(t *testing.T) {
	p, cfg := mysqlThrough(t)
	db := mysqlOpen(t, cfg)
	var id int64
	if err := db.QueryRow("SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	bs := p.Backends()
	if len(bs) != 1 || int64(bs[0].PID) != id || !bs[0].Open {
		t.Fatalf("backends %+v, want thread %d open", bs, id)
	}
	if err := p.Cancel(context.Background(), bs[0]); err == nil {
		t.Fatal("Cancel on a MySQL proxy said it cancelled")
	}
}

// TestMySQLTLSIsNotOffered: the proxy's greeting offers no TLS, so a
// client that requires it cannot connect, and one that merely prefers it
// goes on in plain TCP.
func TestMySQLTLSIsNotOffered(t *testing.T) {
	_, cfg := mysqlThrough(t)
	cfg.TLSConfig = "preferred"
	mysqlOpen(t, cfg)
	_, cfg = mysqlThrough(t)
	cfg.TLSConfig = "skip-verify"
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	if err := db.Ping(); err == nil {
		t.Fatal("a client that requires TLS connected through the proxy")
	}
}

// TestMySQLMarks: a prepared statement's bound values carry the
// delivery's marks, as a text query's literals do: a watch told by marks
// keeps a poller's statements apart.
func TestMySQLMarks(t *testing.T) {
	p, cfg := mysqlThrough(t)
	db := mysqlOpen(t, cfg)
	tbl := mysqlTable(t, db)
	w, err := p.Watch(&Boundary{Words: "insert", After: true, Marked: true}, "evt-7", "O-7")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM "+tbl+" WHERE k = ?", "poll").Scan(&n); err != nil {
			done <- err
			return
		}
		if _, err := db.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, ?)", "other", 1); err != nil {
			done <- err
			return
		}
		_, err := db.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, ?)", "evt-7", 2)
		done <- err
	}()
	heldOrFail(t, w, done, "marks")
	hit := w.Hit()
	w.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := w.Stop()
	if hit == nil || len(got) != 1 || got[0].Answer != "INSERT 1" {
		t.Fatalf("held at %+v; trace %+v, want the marked insert alone", hit, got)
	}
	if o := w.Others(); len(o) != 2 {
		t.Fatalf("others %+v, want the poll and the other insert", o)
	}
}

// TestMySQLAuthenticationPassesThrough: users of each authentication
// plugin the server offers connect through the proxy with their password
// and are refused with a wrong one: mysql_native_password, and MariaDB's
// client_ed25519 (reached by an auth switch) where the server has it.
func TestMySQLAuthenticationPassesThrough(t *testing.T) {
	admin := mysqlOpen(t, mysqlServer(t))
	// MariaDB ships ed25519 as a plugin to install; MySQL has none.
	_, edErr := admin.Exec("INSTALL SONAME 'auth_ed25519'")
	if edErr != nil && strings.Contains(edErr.Error(), "already") {
		edErr = nil
	}
	users := []struct{ user, create string }{
		{"redeliver_native", "IDENTIFIED BY 'native-pw'"},
		{"redeliver_ed25519", "IDENTIFIED VIA ed25519 USING PASSWORD('ed25519-pw')"},
	}
	for _, u := range users {
		t.Run(u.user, func(t *testing.T) {
			if strings.Contains(u.create, "ed25519") && edErr != nil {
				t.Skipf("the server has no ed25519 plugin: %v", edErr)
			}
			host := "127.0.0.1"
			admin.Exec("DROP USER IF EXISTS '" + u.user + "'@'" + host + "'")
			if _, err := admin.Exec("CREATE USER '" + u.user + "'@'" + host + "' " + u.create); err != nil {
				t.Skipf("cannot create the user: %v", err)
			}
			t.Cleanup(func() { admin.Exec("DROP USER IF EXISTS '" + u.user + "'@'" + host + "'") })
			password := strings.Split(u.create, "'")[1]
			p, cfg := mysqlThrough(t)
			cfg.User, cfg.Passwd, cfg.DBName = u.user, password, ""
			db := mysqlOpen(t, cfg)
			var who string
			if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&who); err != nil || !strings.HasPrefix(who, u.user+"@") {
				t.Fatalf("connected as %q (%v), want %s", who, err, u.user)
			}
			bad := cfg.Clone()
			bad.Passwd = "wrong"
			c, _ := mysql.NewConnector(bad)
			wrong := sql.OpenDB(c)
			defer wrong.Close()
			var me *mysql.MySQLError
			if err := wrong.Ping(); !errors.As(err, &me) || me.Number != 1045 {
				t.Fatalf("a wrong password: %v, want access denied (1045)", err)
			}
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestMySQLLoadDataLocalInfile: LOAD DATA LOCAL INFILE passes through:
// the server asks for the file, the client sends it (packets that are
// no command), and the statement is answered with its rows; a hold
// after it sees them committed.
func TestMySQLLoadDataLocalInfile(t *testing.T) {
	p, cfg := mysqlThrough(t)
	cfg.AllowAllFiles = true
	admin := mysqlOpen(t, mysqlServer(t))
	var on int
	if err := admin.QueryRow("SELECT @@local_infile").Scan(&on); err != nil || on == 0 {
		t.Skipf("the server refuses LOAD DATA LOCAL (local_infile=%d, %v)", on, err)
	}
	tbl := mysqlTable(t, admin)
	file := t.TempDir() + "/rows.tsv"
	var rows strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&rows, "k%d\t%d\n", i, i)
	}
	if err := os.WriteFile(file, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	db := mysqlOpen(t, cfg)
	w, err := p.Watch(&Boundary{Words: "load data", After: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.Exec("LOAD DATA LOCAL INFILE '" + file + "' INTO TABLE " + tbl)
		if err == nil {
			_, err = db.Exec("SELECT 1")
		}
		done <- err
	}()
	heldOrFail(t, w, done, "load data")
	if n := mysqlCount(t, admin, tbl); n != 1000 {
		t.Errorf("held after the load, %d rows are committed, want 1000", n)
	}
	w.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.Stop(); len(got) != 2 || got[0].Answer != "LOAD 1000" || got[1].Answer != "SELECT 1" {
		t.Fatalf("trace:\n%s", traceLines(got))
	}
}

// TestMySQLAutocommitOffIsSeen: a connection that turned autocommit off
// before the watch (as Python's MySQLdb does on connecting) has its
// statements marked Implicit, from the server's status, in both
// protocols; once autocommit is on again, they are not.
func TestMySQLAutocommitOffIsSeen(t *testing.T) {
	for _, binary := range []bool{false, true} {
		p, cfg := mysqlThrough(t)
		cfg.InterpolateParams = !binary
		db := mysqlOpen(t, cfg)
		tbl := mysqlTable(t, db)
		watched := func(stmts ...string) []Statement {
			t.Helper()
			w, err := p.Watch(nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range stmts {
				if _, err := db.Exec(q, "a"); err != nil {
					t.Fatalf("binary %v: %s: %v", binary, q, err)
				}
			}
			return w.Stop()
		}
		insert := "INSERT INTO " + tbl + " (k, n) VALUES (?, 1)"
		if _, err := db.Exec("SET autocommit = 0"); err != nil {
			t.Fatal(err)
		}
		st := watched(insert, "DELETE FROM "+tbl+" WHERE k = ?")
		if len(st) != 2 || !st[0].Implicit || !st[1].Implicit {
			t.Fatalf("binary %v: autocommit off: trace %+v, want both Implicit", binary, st)
		}
		if _, err := db.Exec("COMMIT"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("SET autocommit = 1"); err != nil {
			t.Fatal(err)
		}
		if st := watched(insert); len(st) != 1 || st[0].Implicit {
			t.Fatalf("binary %v: autocommit on: trace %+v, want none Implicit", binary, st)
		}
	}
}
