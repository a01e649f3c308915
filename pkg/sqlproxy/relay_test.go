package sqlproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// count is the rows of tbl as another connection sees them: what is
// committed.
func count(t *testing.T, admin *pgx.Conn, tbl string) int {
	t.Helper()
	var n int
	if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM "+tbl).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// heldOrFail waits for the watch to hold, failing the test if the work
// ends first or nothing happens.
func heldOrFail(t *testing.T, w *Watch, done <-chan error, what string) {
	t.Helper()
	select {
	case <-w.Held():
	case err := <-done:
		t.Fatalf("%s: ended (%v) without reaching the boundary", what, err)
	case <-time.After(10 * time.Second):
		w.Cut()
		t.Fatalf("%s: the boundary was never reached", what)
	}
}

// TestAfterAutocommitIsCommitted: held after a statement that commits on
// its own (no BEGIN), the statement's effect is committed, as the
// consumer would find it on seeing the answer — in both protocols — and
// a kill there keeps it. Inside a pipeline the answer is held where it
// comes, before the next statement runs and before anything commits.
func TestAfterAutocommitIsCommitted(t *testing.T) {
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeSimpleProtocol}
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			p, dsn := through(t)
			admin := connect(t, server(t).String())
			tbl := table(t, admin)
			c := connect(t, dsn)
			ctx := context.Background()
			w, err := p.Watch(&Boundary{Index: 1, After: true})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", mode, "payment")
				if err == nil {
					_, err = c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 2)", mode, "marker")
				}
				done <- err
			}()
			heldOrFail(t, w, done, mode.String())
			if n := count(t, admin, tbl); n != 1 {
				t.Errorf("held after the autocommitted insert, %d rows are committed, want 1", n)
			}
			w.Cut()
			if err := <-done; err == nil {
				t.Fatal("the second insert went through a cut connection")
			}
			w.Stop()
			if n := count(t, admin, tbl); n != 1 {
				t.Errorf("killed after the autocommitted insert, %d rows are left, want 1", n)
			}
		})
	}
	t.Run("pipeline", func(t *testing.T) {
		p, dsn := through(t)
		admin := connect(t, server(t).String())
		tbl := table(t, admin)
		c := connect(t, dsn)
		w, err := p.Watch(&Boundary{Index: 1, After: true})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			b := &pgx.Batch{}
			b.Queue("INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "a")
			b.Queue("INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "b")
			done <- c.SendBatch(context.Background(), b).Close()
		}()
		heldOrFail(t, w, done, "pipeline")
		if n := count(t, admin, tbl); n != 0 {
			t.Errorf("held after the first statement of a pipeline, %d rows are committed, want 0", n)
		}
		w.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if st := w.Stop(); len(st) != 2 || st[0].Answer != "INSERT 0 1" || st[1].Answer != "INSERT 0 1" {
			t.Fatalf("trace %+v", st)
		}
		if n := count(t, admin, tbl); n != 2 {
			t.Errorf("%d rows after the pipeline, want 2", n)
		}
	})
}

// TestCopyPassesEveryBoundary: COPY in both directions goes through
// holds before and after it, let go or cut, with its rows where the
// boundary says.
func TestCopyPassesEveryBoundary(t *testing.T) {
	tests := []struct {
		name  string
		at    Boundary
		cut   bool
		rows  int // committed after
		trace string
	}{
		{"let go before COPY", Boundary{Words: "copy"}, false, 3, "copy → COPY 3"},
		{"let go after COPY", Boundary{Words: "copy", After: true}, false, 3, "copy → COPY 3"},
		{"cut before COPY", Boundary{Words: "copy"}, true, 0, ""},
		{"cut after COPY", Boundary{Words: "copy", After: true}, true, 3, ""},
		{"let go after COPY TO", Boundary{Index: 2, After: true}, false, 3, "copy → COPY 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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
			var out bytes.Buffer
			go func() {
				rows := pgx.CopyFromRows([][]any{{"c1", 1}, {"c2", 2}, {"c3", 3}})
				_, err := c.CopyFrom(ctx, pgx.Identifier{tbl}, []string{"k", "n"}, rows)
				if err == nil {
					_, err = c.PgConn().CopyTo(ctx, &out, "COPY "+tbl+" TO STDOUT")
				}
				done <- err
			}()
			heldOrFail(t, w, done, tt.name)
			if tt.cut {
				w.Cut()
				<-done
			} else {
				w.Release()
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("COPY never ended after the hold was let go")
				}
				if got := strings.Count(out.String(), "\n"); got != 3 {
					t.Errorf("COPY TO gave %d lines, want 3", got)
				}
			}
			trace := w.Stop()
			if tt.trace != "" {
				if len(trace) != 2 || Words(trace[0].Text)[:4]+" → "+trace[0].Answer != tt.trace || trace[1].Answer != "COPY 3" {
					t.Errorf("trace %+v", trace)
				}
			}
			deadline := time.Now().Add(5 * time.Second)
			for count(t, admin, tbl) != tt.rows && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if n := count(t, admin, tbl); n != tt.rows {
				t.Errorf("%d rows, want %d", n, tt.rows)
			}
		})
	}
}

// TestMultiStatementQuery: a simple query of several statements counts
// each with its own answer; a boundary inside it, which cannot be held,
// is passed over, and the one after its last statement holds with the
// query's work committed.
func TestMultiStatementQuery(t *testing.T) {
	p, dsn := through(t)
	admin := connect(t, server(t).String())
	tbl := table(t, admin)
	c := connect(t, dsn)
	ctx := context.Background()
	q := "BEGIN; INSERT INTO " + tbl + " (k, n) VALUES ('a;b', 1); /* ; */ INSERT INTO " + tbl + " VALUES ($$x;$$, 2); COMMIT"

	w, err := p.Watch(&Boundary{Words: "insert into"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PgConn().Exec(ctx, q).ReadAll(); err != nil {
		t.Fatalf("the query was held inside, or failed: %v", err)
	}
	var lines []string
	for _, st := range w.Stop() {
		lines = append(lines, fmt.Sprintf("%d %d/%d %s → %s", st.Index, st.Part, st.Parts, strings.Fields(st.Text)[0], st.Answer))
	}
	want := "1 1/4 BEGIN → BEGIN|2 2/4 INSERT → INSERT 0 1|3 3/4 /* → INSERT 0 1|4 4/4 COMMIT → COMMIT"
	if got := strings.Join(lines, "|"); got != want {
		t.Errorf("trace\n%s\nwant\n%s", got, want)
	}

	w, err = p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	c.PgConn().Exec(ctx, "SELECT 1; SELECT 1/0; SELECT 2").ReadAll()
	lines = nil
	for _, st := range w.Stop() {
		lines = append(lines, st.Text+" → "+st.Answer)
	}
	if got := strings.Join(lines, "|"); got != "SELECT 1 → SELECT 1|SELECT 1/0 → ERROR 22012|SELECT 2 → not run (an earlier error)" {
		t.Errorf("trace with an error: %s", got)
	}

	w, err = p.Watch(&Boundary{Words: "commit", After: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.PgConn().Exec(ctx, "BEGIN; INSERT INTO "+tbl+" (k, n) VALUES ('c', 3); COMMIT").ReadAll()
		done <- err
	}()
	heldOrFail(t, w, done, "after the commit")
	if n := count(t, admin, tbl); n != 3 {
		t.Errorf("held after the query's COMMIT, %d rows committed, want 3", n)
	}
	w.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	w.Stop()
}

// TestSuspendedPortal: a portal run in parts keeps its answers; the
// statement after it in the pipeline gets its own.
func TestSuspendedPortal(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	w, err := p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	fe := c.PgConn().Frontend()
	fe.Send(&pgproto3.Parse{Query: "SELECT generate_series(1, 3)"})
	fe.Send(&pgproto3.Bind{DestinationPortal: "p"})
	fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 1})
	fe.Send(&pgproto3.Execute{Portal: "p"})
	fe.Send(&pgproto3.Parse{Query: "SELECT 42"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	var lines []string
	for _, st := range w.Stop() {
		lines = append(lines, st.Text+" → "+st.Answer)
	}
	if got := strings.Join(lines, "|"); got != "SELECT generate_series(1, 3) → SELECT 2|SELECT 42 → SELECT 1" {
		t.Errorf("trace: %s", got)
	}
}

// startupTo opens a raw connection through the proxy, as the test
// server's user, and reads up to the first ReadyForQuery.
func startupTo(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	u := server(t)
	nc, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	params := map[string]string{"user": u.User.Username(), "database": strings.TrimPrefix(u.Path, "/")}
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: params})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := fe.Receive()
		if err != nil {
			t.Fatal(err)
		}
		switch m.(type) {
		case *pgproto3.ReadyForQuery:
			return nc
		case *pgproto3.ErrorResponse:
			t.Skipf("the test server wants a password: %v", m)
		}
	}
}

// TestLargeFrameEndsTheConnection: a message declaring more than the
// proxy reads whole ends its connection at once, with a reason, and no
// memory is taken for what it only declared.
func TestLargeFrameEndsTheConnection(t *testing.T) {
	p, _ := through(t)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range 5 {
		nc := startupTo(t, p)
		head := []byte{'Q', 0, 0, 0, 0}
		binary.BigEndian.PutUint32(head[1:], 1<<30)
		if _, err := nc.Write(append(head, "SELECT "...)); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(nc); err != nil {
			t.Fatalf("frame %d: the proxy kept the connection (%v)", i, err)
		}
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	if grew > 64<<20 {
		t.Errorf("five frames declaring 1 GB took %d MB", grew>>20)
	}
	t.Logf("five frames declaring 1 GB: %d KiB allocated in all", grew>>10)
	var big *tooLarge
	if err := p.Err(); !errors.As(err, &big) || !strings.Contains(err.Error(), "is over the 64 MiB the database proxy reads whole") {
		t.Errorf("Err() = %v", err)
	}
}

// TestLargeCopyDataStreams: COPY data and rows over the limit are relayed
// as they come, byte for byte, without being read whole. The message is
// made and checked as it streams, so the test holds none of it either.
func TestLargeCopyDataStreams(t *testing.T) {
	for _, typ := range []byte{'d', 'Q'} {
		size := maxBuffered + 1
		head := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(head[1:], uint32(4+size))
		in := io.MultiReader(bytes.NewReader(head), &xs{left: size})
		out := &xsWritten{head: head}
		c := &conn{p: &Proxy{}}
		w := bufio.NewWriter(out)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := c.read(bufio.NewReader(in), w, nil, streamsFromClient)
		w.Flush()
		runtime.ReadMemStats(&after)
		if typ == 'Q' {
			if err == nil || c.p.Err() == nil {
				t.Errorf("a Query over the limit was read (%v)", err)
			}
			continue
		}
		if err != nil || m.raw != nil || out.bad != "" || out.n != len(head)+size {
			t.Errorf("CopyData over the limit: %v, %d bytes kept, %d of %d relayed %s", err, len(m.raw), out.n, len(head)+size, out.bad)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("relaying %d MiB of CopyData allocated %d KiB", size>>20, grew>>10)
		}
	}
}

// xs reads left bytes of 'x'.
type xs struct{ left int }

var xBlock = bytes.Repeat([]byte("x"), 32<<10)

func (r *xs) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.left)], xBlock)
	r.left -= n
	return n, nil
}

// xsWritten counts what is written to it and says where it first differs
// from head followed by 'x's.
type xsWritten struct {
	head []byte
	n    int
	bad  string
}

func (w *xsWritten) Write(p []byte) (int, error) {
	rest := p
	if w.n < len(w.head) {
		k := min(len(rest), len(w.head)-w.n)
		if w.bad == "" && !bytes.Equal(rest[:k], w.head[w.n:w.n+k]) {
			w.bad = fmt.Sprintf("(the header differs at byte %d)", w.n)
		}
		rest = rest[k:]
	}
	if w.bad == "" && bytes.Count(rest, []byte("x")) != len(rest) {
		w.bad = fmt.Sprintf("(the body differs after byte %d)", w.n)
	}
	w.n += len(p)
	return len(p), nil
}

func TestSplitStatements(t *testing.T) {
	tests := []struct {
		q    string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1;", []string{"SELECT 1"}},
		{"BEGIN; INSERT INTO t VALUES (1); COMMIT", []string{"BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"}},
		{"SELECT ';'; SELECT 'it''s;'", []string{"SELECT ';'", "SELECT 'it''s;'"}},
		{`SELECT E'a\';b'; SELECT 2`, []string{`SELECT E'a\';b'`, "SELECT 2"}},
		{`SELECT "a;b" FROM t; SELECT 2`, []string{`SELECT "a;b" FROM t`, "SELECT 2"}},
		{"SELECT $$;$$; SELECT $f$ $$; $f$", []string{"SELECT $$;$$", "SELECT $f$ $$; $f$"}},
		{"SELECT $1; SELECT a$b$c", []string{"SELECT $1", "SELECT a$b$c"}},
		{"-- a; b\nSELECT 1; /* x; /* y; */ z; */ SELECT 2", []string{"-- a; b\nSELECT 1", "/* x; /* y; */ z; */ SELECT 2"}},
		{" ; -- ping\n;", nil},
		{"SELECT 'unterminated; SELECT 2", []string{"SELECT 'unterminated; SELECT 2"}},
	}
	for _, tt := range tests {
		if got := splitStatements(tt.q); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitStatements(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

// TestMatchesPastComments: a leading comment, as sqlcommenter or an ORM
// writes it, does not hide a statement's first words.
func TestMatchesPastComments(t *testing.T) {
	tests := []struct {
		text, words string
		want        bool
	}{
		{"/* app='x',route='/pay' */ INSERT INTO payments VALUES (1)", "insert into payments", true},
		{"-- traced\n  INSERT INTO payments VALUES (1)", "insert into", true},
		{"/* a /* nested */ b */ COMMIT", "commit", true},
		{"/* unterminated INSERT INTO payments", "insert", false},
		{"INSERT INTO payments /* c */ VALUES (1)", "insert into payments", true},
		{"/* INSERT */ SELECT 1", "insert", false},
	}
	for _, tt := range tests {
		if got := Matches(tt.text, tt.words); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.text, tt.words, got, tt.want)
		}
	}
}

// TestCopyRaced: two workers copy at once, one held after its COPY while
// the other runs to its end, then let go: both copies land, as a
// concurrent step's schedule plays them.
func TestCopyRaced(t *testing.T) {
	for _, after := range []bool{false, true} {
		p, dsn := through(t)
		admin := connect(t, server(t).String())
		tbl := table(t, admin)
		conns := []*pgx.Conn{connect(t, dsn), connect(t, dsn)}
		w, err := p.Watch(&Boundary{Lane: 1, Index: 1, After: after})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for i, c := range conns {
			go func() {
				rows := pgx.CopyFromRows([][]any{{fmt.Sprint(i, "a"), 1}, {fmt.Sprint(i, "b"), 2}})
				_, err := c.CopyFrom(context.Background(), pgx.Identifier{tbl}, []string{"k", "n"}, rows)
				done <- err
			}()
		}
		heldOrFail(t, w, make(chan error), fmt.Sprintf("after %v", after))
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the worker not held: %v", err)
			}
		case <-time.After(10 * time.Second):
			w.Cut()
			t.Fatal("the worker not held did not finish while the other was held")
		}
		w.Release()
		if err := <-done; err != nil {
			t.Fatalf("the held worker, let go: %v", err)
		}
		w.Stop()
		if n := count(t, admin, tbl); n != 4 {
			t.Errorf("%d rows after both copies, want 4", n)
		}
	}
}

// TestTraceProtocol: a statement of the extended protocol is traced with
// how it was prepared (named or unnamed) and the Sync that ended it, one
// Sync for a pipeline of two; a simple Query has neither, and one whose
// Sync has not come yet has none.
func TestTraceProtocol(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	w, err := p.Watch(nil)
	if err != nil {
		t.Fatal(err)
	}
	fe := c.PgConn().Frontend()
	until := func(done func(pgproto3.BackendMessage) bool) {
		t.Helper()
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if done(m) {
				return
			}
		}
	}
	ready := func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }
	fe.Send(&pgproto3.Parse{Name: "s1", Query: "SELECT 1"})
	fe.Send(&pgproto3.Bind{PreparedStatement: "s1"})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	until(ready)
	fe.Send(&pgproto3.Parse{Query: "SELECT 2"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Parse{Query: "SELECT 3"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	until(ready)
	fe.Send(&pgproto3.Query{String: "SELECT 4"})
	until(ready)
	fe.Send(&pgproto3.Parse{Query: "SELECT 5"})
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Flush{})
	until(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.CommandComplete); return ok })
	got := w.Stop()
	fe.Send(&pgproto3.Sync{})
	until(ready)
	if len(got) != 5 {
		t.Fatalf("%d statements traced, want 5: %+v", len(got), got)
	}
	first := got[0].Sync
	var lines []string
	for _, st := range got {
		sync := "no Sync"
		if st.Sync != 0 {
			sync = fmt.Sprintf("Sync %d", st.Sync-first+1)
		}
		lines = append(lines, fmt.Sprintf("%s extended=%v name=%q %s", st.Text, st.Extended, st.Name, sync))
	}
	want := []string{
		`SELECT 1 extended=true name="s1" Sync 1`,
		`SELECT 2 extended=true name="" Sync 2`,
		`SELECT 3 extended=true name="" Sync 2`,
		`SELECT 4 extended=false name="" no Sync`,
		`SELECT 5 extended=true name="" no Sync`,
	}
	if first == 0 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
