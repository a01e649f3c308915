package sqlproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// poll runs an UPDATE on the pool every 3 ms, as a background job of
// the consumer would, until the test ends: autocommitted, or in a
// transaction of its own (BEGIN, UPDATE, COMMIT) when inTx.
func poll(t *testing.T, pool *pgxpool.Pool, tbl string, inTx bool) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	// Its first run waited for: a delivery watched right away would
	// otherwise see none of the poller's statements while the pool
	// still opens its connection.
	first := make(chan struct{})
	go func() {
		defer wg.Done()
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		var once sync.Once
		for ran := false; ; ran = true {
			if ran {
				once.Do(func() { close(first) })
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !inTx {
				pool.Exec(ctx, "UPDATE "+tbl+" SET n = n + 1 WHERE k = 'lock'")
				continue
			}
			pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "UPDATE "+tbl+" SET n = n + 1 WHERE k = 'lock'")
				return err
			})
		}
	}()
	t.Cleanup(func() { stop(); wg.Wait() })
	<-first
}

// deliver is one delivery of a payments consumer on a shared pool: a
// marker lookup by event id, then the marker and the payment in one
// transaction. A short pause between its steps gives the poller's
// statements room to fall in between.
func deliver(ctx context.Context, pool *pgxpool.Pool, tbl, id, key string) error {
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = $1", id).Scan(&n); err != nil {
		return err
	}
	time.Sleep(4 * time.Millisecond)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	time.Sleep(4 * time.Millisecond)
	if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", id); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('pay-' || $1::text, 1)", key); err != nil {
		return err
	}
	time.Sleep(4 * time.Millisecond)
	return tx.Commit(ctx)
}

func traceOf(stmts []Statement) string {
	var lines []string
	for _, st := range stmts {
		lines = append(lines, fmt.Sprintf("%d %s", st.Index, Words(st.Text)))
	}
	return strings.Join(lines, "\n")
}

// TestBackgroundPollerStaysApart: a poller on the consumer's own pool
// runs an UPDATE every 3 ms while a delivery is watched, autocommitted or
// in transactions of its own. The delivery's statements are the same on
// every run — the poller's are kept apart, never counted — and a
// boundary held in a later run lands on the same statement of the
// delivery, never on the poller's, and counts the delivery's statements
// the same.
func TestBackgroundPollerStaysApart(t *testing.T) {
	for _, inTx := range []bool{false, true} {
		t.Run(fmt.Sprintf("in transactions %v", inTx), func(t *testing.T) { pollerStaysApart(t, inTx) })
	}
}

func pollerStaysApart(t *testing.T, inTx bool) {
	p, dsn := through(t)
	admin := connect(t, server(t).String())
	tbl := table(t, admin)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('lock', 0)"); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, dsn+"&pool_max_conns=4")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	poll(t, pool, tbl, inTx)
	want := strings.Join([]string{
		"1 select count(*) from " + tbl + " where k = $1",
		"2 begin",
		"3 insert into " + tbl + " (k, n) values ($1, 1)",
		"4 insert into " + tbl + " (k, n) values ('pay-' || $1::text, 1)",
		"5 commit",
	}, "\n")
	// A busy machine may starve the poller during one delivery, not
	// during all of them.
	apart := 0
	for i := range 3 {
		id, key := fmt.Sprintf("evt-%d", i), fmt.Sprintf("O-%d", i)
		if err := p.Idle(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		w, err := p.Watch(nil, id, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := deliver(ctx, pool, tbl, id, key); err != nil {
			t.Fatal(err)
		}
		got := w.Stop()
		if traceOf(got) != want {
			t.Fatalf("run %d: the delivery's statements:\n%s\nwant:\n%s", i, traceOf(got), want)
		}
		if !w.Marked() {
			t.Fatalf("run %d: the statements carried the event id, yet the watch says unmarked", i)
		}
		apart += len(w.Others())
	}
	// Held before and after each statement, on the poller's busy pool.
	stmts := strings.Split(want, "\n")
	for k := 1; k <= 5; k++ {
		for _, after := range []bool{false, true} {
			id, key := fmt.Sprintf("evt-h%d%v", k, after), fmt.Sprintf("O-h%d%v", k, after)
			at := &Boundary{Index: k, After: after, Marked: true}
			w, err := p.Watch(at, id, key)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- deliver(ctx, pool, tbl, id, key) }()
			select {
			case <-w.Held():
			case err := <-done:
				t.Fatalf("%s: the delivery ended (%v) without reaching it", at, err)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s was never reached", at)
			}
			hit := w.Hit()
			w.Release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			got := w.Stop()
			apart += len(w.Others())
			if got := fmt.Sprintf("%d %s", k, Words(hit.Text)); got != stmts[k-1] {
				t.Fatalf("%s held %q, want %q", at, got, stmts[k-1])
			}
			if traceOf(got) != want {
				t.Fatalf("%s: the delivery's statements:\n%s\nwant:\n%s", at, traceOf(got), want)
			}
		}
	}
	if apart == 0 {
		t.Fatal("the poller ran no statement while a delivery was watched")
	}
}

// TestUnmarkedDeliveryKeepsEveryStatement: a delivery none of whose
// statements carries its id or key keeps every statement, autocommitted
// or not, as before marks were looked for.
func TestUnmarkedDeliveryKeepsEveryStatement(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	w, err := p.Watch(nil, "evt-x", "O-x")
	if err != nil {
		t.Fatal(err)
	}
	c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('a', 1)")
	c.Exec(ctx, "UPDATE "+tbl+" SET n = 2")
	got := w.Stop()
	if len(got) != 2 || w.Marked() {
		t.Fatalf("got %s (marked %v), want both statements, unmarked", traceOf(got), w.Marked())
	}
}

// TestLateCommitBelongsToItsTransaction: a COMMIT sent after a delivery's
// watch ended (the consumer answered first) is not the next delivery's:
// it ends a transaction the earlier delivery began, and is kept apart.
func TestLateCommitBelongsToItsTransaction(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	w, err := p.Watch(nil, "evt-11")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-11"); err != nil {
		t.Fatal(err)
	}
	first := w.Stop()
	next, err := p.Watch(&Boundary{Index: 1, Marked: true}, "evt-12")
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-120"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next.Held():
		t.Fatalf("the next delivery was held at %q, a statement not its own", next.Hit().Text)
	default:
	}
	got := next.Stop()
	if len(first) != 2 || len(got) != 0 || len(next.Others()) != 2 {
		t.Fatalf("first delivery %s; next %s; apart %d; want 2, none, 2", traceOf(first), traceOf(got), len(next.Others()))
	}
}

// TestIdleWaitsForTheTransaction: Idle returns once every connection is
// outside a transaction, and names the connection still in one when its
// limit passes.
func TestIdleWaitsForTheTransaction(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	if err := p.Idle(ctx, time.Second); err != nil {
		t.Fatalf("an idle connection: %v", err)
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", mode, fmt.Sprint(mode))
		err = p.Idle(ctx, 50*time.Millisecond)
		var busy *BusyError
		if !errors.As(err, &busy) || !busy.InTx || busy.Pid == 0 {
			t.Fatalf("%v: inside a transaction, Idle said %v", mode, err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Idle(ctx, 5*time.Second) }()
		time.Sleep(20 * time.Millisecond)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%v: after the commit, Idle said %v", mode, err)
		}
	}
	// A transaction a multi-statement query leaves open is seen too.
	if _, err := c.Exec(ctx, "SELECT 1; BEGIN", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if err := p.Idle(ctx, 50*time.Millisecond); err == nil {
		t.Fatal("a transaction left open by a multi-statement query was taken for idle")
	}
	c.Exec(ctx, "COMMIT")
	if err := p.Idle(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestHasWord(t *testing.T) {
	tests := []struct {
		s, word string
		want    bool
	}{
		{"O-30", "O-30", true},
		{"payment-O-30", "O-30", true},
		{"VALUES ('O-30', 1)", "O-30", true},
		{"O-300", "O-30", false},
		{"XO-30", "O-30", false},
		{"O-3 O-30", "O-30", true},
		{"evt_1", "evt", false},
		{"{\"id\":\"evt-1\"}", "evt-1", true},
		{"", "x", false},
		{"-1-", "-1-", true},
	}
	for _, tt := range tests {
		if got := hasWord([]byte(tt.s), tt.word); got != tt.want {
			t.Errorf("hasWord(%q, %q) = %v, want %v", tt.s, tt.word, got, tt.want)
		}
	}
}

func TestTransactionWords(t *testing.T) {
	tests := []struct {
		text         string
		begins, ends bool
	}{
		{"begin", true, false},
		{"/* app='x' */ BEGIN ISOLATION LEVEL SERIALIZABLE", true, false},
		{"START TRANSACTION", true, false},
		{"commit", false, true},
		{"END", false, true},
		{"rollback", false, true},
		{"ROLLBACK TO SAVEPOINT a", false, false},
		{"COMMIT AND CHAIN", false, false},
		{"COMMIT AND NO CHAIN", false, true},
		{"PREPARE TRANSACTION 'x'", false, true},
		{"beginning", false, false},
		{"committed_at", false, false},
	}
	for _, tt := range tests {
		if b, e := begins(tt.text), ends(tt.text); b != tt.begins || e != tt.ends {
			t.Errorf("%q: begins %v ends %v, want %v %v", tt.text, b, e, tt.begins, tt.ends)
		}
	}
}

// bindOf builds a Bind message: portal, statement, no format codes, the
// values (nil: NULL), no result formats.
func bindOf(values ...[]byte) message {
	b := []byte{'B', 0, 0, 0, 0}
	b = append(b, "p\x00s\x00"...)
	b = append(b, 0, 0, byte(len(values)>>8), byte(len(values)))
	for _, v := range values {
		if v == nil {
			b = append(b, 0xff, 0xff, 0xff, 0xff)
			continue
		}
		n := len(v)
		b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		b = append(b, v...)
	}
	b = append(b, 0, 0)
	n := len(b) - 1
	b[1], b[2], b[3], b[4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return message{typ: 'B', raw: b}
}

func TestBindValues(t *testing.T) {
	got := bindValues(bindOf([]byte("evt-1"), nil, []byte{}))
	if len(got) != 3 || string(got[0]) != "evt-1" || got[1] != nil || got[2] == nil {
		t.Fatalf("values %q", got)
	}
	m := bindOf([]byte("evt-1"))
	m.raw = m.raw[:len(m.raw)-6] // the value cut short
	if got := bindValues(m); got != nil {
		t.Fatalf("a truncated Bind gave %q", got)
	}
}

// FuzzBindValues: no Bind body, however broken, makes the reader panic or
// return a value longer than the message.
func FuzzBindValues(f *testing.F) {
	f.Add(bindOf([]byte("evt-1"), nil).raw[5:])
	f.Add([]byte("\x00\x00\x00\x01\x00\x01\x00\x02\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, body []byte) {
		raw := append([]byte{'B', 0, 0, 0, 0}, body...)
		for _, v := range bindValues(message{typ: 'B', raw: raw}) {
			if len(v) > len(body) {
				t.Fatalf("a value of %d bytes from a body of %d", len(v), len(body))
			}
		}
	})
}
