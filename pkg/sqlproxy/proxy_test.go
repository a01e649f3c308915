package sqlproxy

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// server is the PostgreSQL the tests relay to (REDELIVER_TEST_POSTGRES).
func server(t *testing.T) *url.URL {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDELIVER_TEST_POSTGRES is not set under CI=true: the proxy tests must run")
		}
		t.Skip("set REDELIVER_TEST_POSTGRES to run the proxy tests")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// through starts a proxy to the test server and returns it with the DSN
// that reaches the server through it.
func through(t *testing.T) (*Proxy, string) {
	t.Helper()
	u := server(t)
	p, err := Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	v := *u
	v.Host = p.Addr()
	q := v.Query()
	q.Set("sslmode", "disable")
	v.RawQuery = q.Encode()
	return p, v.String()
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// table makes a table of its own for one test.
func table(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	name := "sqlproxy_" + strings.ToLower(strings.NewReplacer("/", "_", " ", "_", "-", "_").Replace(t.Name()))
	ctx := context.Background()
	if _, err := c.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE "+name+" (k text PRIMARY KEY, n int)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d, err := pgx.Connect(context.Background(), server(t).String()); err == nil {
			d.Exec(context.Background(), "DROP TABLE IF EXISTS "+name)
			d.Close(context.Background())
		}
	})
	return name
}

// TestRelaysBothProtocols: simple and extended queries, named and unnamed
// statements, COPY, many connections at once, all through the proxy.
func TestRelaysBothProtocols(t *testing.T) {
	_, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	// Extended protocol, unnamed and then cached (named) statements.
	for i := range 5 {
		if _, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, $2)", fmt.Sprint("k", i), i); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	// Simple protocol.
	rows, err := c.Query(ctx, "SELECT count(*) FROM "+tbl, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for rows.Next() {
		rows.Scan(&n)
	}
	if rows.Err() != nil || n != 5 {
		t.Fatalf("count = %d, %v; want 5", n, rows.Err())
	}
	// COPY in.
	src := pgx.CopyFromRows([][]any{{"c1", 1}, {"c2", 2}, {"c3", 3}})
	if got, err := c.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"k", "n"}, src); err != nil || got != 3 {
		t.Fatalf("COPY: %d, %v", got, err)
	}
	// An error, and the connection goes on.
	if _, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('k1', 9)"); err == nil {
		t.Fatal("a duplicate key was accepted")
	}
	// Many connections at once.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer cc.Close(ctx)
			for j := range 20 {
				if _, err := cc.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, $2)", fmt.Sprintf("w%d-%d", i, j), j); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&n); err != nil || n != 5+3+160 {
		t.Fatalf("count = %d, %v; want %d", n, err, 5+3+160)
	}
}

// TestCancelReachesTheServer: a cancel request goes through the proxy to
// the server, which stops the statement (a backend sleeping in it would
// not notice its client leaving until the sleep ended).
func TestCancelReachesTheServer(t *testing.T) {
	_, dsn := through(t)
	c := connect(t, dsn)
	admin := connect(t, server(t).String())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	const sleep = "SELECT pg_sleep(19.25)"
	if _, err := c.Exec(ctx, sleep); err == nil {
		t.Fatal("the sleep was not interrupted")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE query = $1 AND state = 'active'", sleep).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the server still runs the statement: the cancel request did not reach it")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTLSIsRefused: a client that prefers TLS goes on in plain TCP; one
// that requires it cannot connect, and the proxy counts both requests.
func TestTLSIsRefused(t *testing.T) {
	p, dsn := through(t)
	prefer := strings.Replace(dsn, "sslmode=disable", "sslmode=prefer", 1)
	c := connect(t, prefer)
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	require := strings.Replace(dsn, "sslmode=disable", "sslmode=require", 1)
	if c, err := pgx.Connect(context.Background(), require); err == nil {
		c.Close(context.Background())
		t.Fatal("sslmode=require connected through a proxy that speaks no TLS")
	}
	if n := p.TLSRefused(); n < 2 {
		t.Fatalf("TLSRefused = %d, want 2 or more", n)
	}
}

// TestTrace: a watched delivery's statements with their answers, in the
// order they were sent; statements outside the watch are not counted.
func TestTrace(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	w, err := p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	c.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = $1", "a").Scan(&n)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "a")
	tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "a")
	tx.Rollback(ctx)
	got := w.Stop()
	c.Exec(ctx, "SELECT 1") // not watched
	var lines []string
	for _, st := range got {
		lines = append(lines, fmt.Sprintf("%d %s → %s", st.Index, Words(st.Text), st.Answer))
	}
	want := []string{
		"1 select count(*) from " + tbl + " where k = $1 → SELECT 1",
		"2 begin → BEGIN",
		"3 insert into " + tbl + " (k, n) values ($1, 1) → INSERT 0 1",
		"4 insert into " + tbl + " (k, n) values ($1, 1) → ERROR 23505",
		"5 rollback → ROLLBACK",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("trace:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// TestHoldAndCut: a connection held at a boundary and cut there leaves
// the database as the boundary says — before the insert: nothing; after
// the commit: the row — on every run.
func TestHoldAndCut(t *testing.T) {
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
			for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
				p, dsn := through(t)
				admin := connect(t, server(t).String())
				tbl := table(t, admin)
				c := connect(t, dsn)
				ctx := context.Background()
				w, err := p.Watch(&tt.at)
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					tx, err := c.Begin(ctx)
					if err == nil {
						_, err = tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", mode, "a")
					}
					if err == nil {
						err = tx.Commit(ctx)
					}
					done <- err
				}()
				select {
				case <-w.Held():
				case err := <-done:
					t.Fatalf("%v: the delivery ended (%v) without reaching %s", mode, err, tt.at)
				case <-time.After(10 * time.Second):
					t.Fatalf("%v: %s was never reached", mode, tt.at)
				}
				hit := w.Hit()
				w.Cut()
				if err := <-done; err == nil {
					t.Fatalf("%v: the transaction succeeded through a cut connection", mode)
				}
				w.Stop()
				// The server notices the closed connection and rolls back.
				var n int
				deadline := time.Now().Add(5 * time.Second)
				for {
					if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+tbl).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n == tt.rows || time.Now().After(deadline) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				if n != tt.rows {
					t.Fatalf("%v: %d rows after the cut at %s (%s), want %d", mode, n, tt.at, hit.Text, tt.rows)
				}
			}
		})
	}
}

// TestHoldAndRelease: a held connection let go carries on as if it had
// never been held.
func TestHoldAndRelease(t *testing.T) {
	for _, after := range []bool{false, true} {
		p, dsn := through(t)
		c := connect(t, dsn)
		tbl := table(t, c)
		ctx := context.Background()
		w, err := p.Watch(&Boundary{Words: "insert", After: after})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "a")
			done <- err
		}()
		<-w.Held()
		select {
		case err := <-done:
			t.Fatalf("the insert returned (%v) while held", err)
		case <-time.After(50 * time.Millisecond):
		}
		w.Release()
		if err := <-done; err != nil {
			t.Fatalf("after the release: %v", err)
		}
		st := w.Stop()
		if len(st) != 1 || st[0].Answer != "INSERT 0 1" {
			t.Fatalf("trace %+v", st)
		}
	}
}

// TestReleaseRestartsTheQuiet: a held connection's part of the delivery
// is not over the moment it is let go, however long it was held: its
// consumer gets the held answer only then and goes on a moment after.
// Over's quiet counts from the release; once it passes, the connection
// is over.
func TestReleaseRestartsTheQuiet(t *testing.T) {
	const quiet = 500 * time.Millisecond
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	w, err := p.Watch(&Boundary{Words: "insert", After: true}, "evt-q")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-q")
		done <- err
	}()
	<-w.Held()
	time.Sleep(quiet + 100*time.Millisecond) // held longer than the quiet
	released := time.Now()
	w.Release()
	if err := <-done; err != nil {
		t.Fatalf("after the release: %v", err)
	}
	over := w.Over(quiet)
	if len(over) != 1 {
		t.Fatalf("want the one connection, got %v", over)
	}
	// On a machine so loaded that the insert's answer took the quiet to
	// come back, the connection is rightly over by now.
	for id, o := range over {
		if o && time.Since(released) < quiet {
			t.Errorf("connection %d is over right after its release", id)
		}
	}
	deadline := time.Now().Add(10 * quiet)
	for !w.Over(quiet)[w.Hit().Conn] {
		if time.Now().After(deadline) {
			t.Fatalf("connection still not over %s after its release", 10*quiet)
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.Stop()
}

func TestMatches(t *testing.T) {
	tests := []struct {
		text, words string
		want        bool
	}{
		{"INSERT INTO payments (id) VALUES ($1)", "insert into payments", true},
		{"  insert\n  into   payments(id)", "INSERT INTO", true},
		{"INSERT INTO payments_log VALUES (1)", "insert into payments", false},
		{"COMMIT", "commit", true},
		{"commit;", "commit", true},
		{"COMMITTED", "commit", false},
		{"SELECT 1", "insert", false},
		{"SELECT 1", "", false},
	}
	for _, tt := range tests {
		if got := Matches(tt.text, tt.words); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.text, tt.words, got, tt.want)
		}
	}
}

// TestHeldBeforeMeansNotRun: a statement held before it reaches the
// database runs, once let go, as if it had been sent then: a SELECT held
// while another connection commits a row sees the row, in both
// protocols. (The extended protocol's snapshot is taken at Bind: a hold
// at the Execute alone would read the past.)
func TestHeldBeforeMeansNotRun(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		p, dsn := through(t)
		admin := connect(t, server(t).String())
		tbl := table(t, admin)
		c := connect(t, dsn)
		ctx := context.Background()
		w, err := p.Watch(&Boundary{Words: "select count"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan int, 1)
		go func() {
			var n int
			if err := c.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = $1", mode, "a").Scan(&n); err != nil {
				n = -1
			}
			got <- n
		}()
		<-w.Held()
		if _, err := admin.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('a', 1)"); err != nil {
			t.Fatal(err)
		}
		w.Release()
		if n := <-got; n != 1 {
			t.Errorf("%v: the SELECT let go after the commit counted %d rows, want 1", mode, n)
		}
		w.Stop()
	}
}

func TestBlank(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"-- ping", true},
		{"", true},
		{" ; ;\n", true},
		{"/* hello */ -- x\n;", true},
		{"/* unterminated", true},
		{"-- a\nSELECT 1", false},
		{"/* c */ INSERT INTO t VALUES (1)", false},
		{"SELECT 1 -- ping", false},
	}
	for _, tt := range tests {
		if got := Blank(tt.text); got != tt.want {
			t.Errorf("Blank(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestCloseWhileHeld: closing the proxy while a connection is held at a
// boundary (the run interrupted mid-race) ends everything at once.
func TestCloseWhileHeld(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	w, err := p.Watch(&Boundary{Words: "select"})
	if err != nil {
		t.Fatal(err)
	}
	execd := make(chan error, 1)
	go func() { _, err := c.Exec(context.Background(), "SELECT 1"); execd <- err }()
	<-w.Held()
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited on a held connection")
	}
	if err := <-execd; err == nil {
		t.Error("the held statement succeeded through a closed proxy")
	}
}

// TestStopWhileHeld: a watch stopped while its boundary holds a
// statement lets the statement go and reads the trace at once, as a race
// does once its schedule is over. On one P the stopping goroutine reads
// before the released connection runs again: a field the connection
// writes, once let go, without the statement's lock is a data race under
// -race, and fails the test.
func TestStopWhileHeld(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	ctx := context.Background()
	w, err := p.Watch(&Boundary{Words: "select"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(ctx, "SELECT $1::int", 1)
		done <- err
	}()
	<-w.Held()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	st := w.Stop()
	if err := <-done; err != nil {
		t.Fatalf("after the stop: %v", err)
	}
	if len(st) != 1 || !strings.HasPrefix(Words(st[0].Text), "select") {
		t.Fatalf("trace %+v", st)
	}
}
