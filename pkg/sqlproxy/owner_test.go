package sqlproxy

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TestOwners: the owner function is asked about each connection the
// proxy accepts, with the client's address and the proxy's; its answer
// is Owner of that connection and the Owner of each statement that came
// on it; Over says a connection's part of the delivery is over once it is
// idle and quiet, not while it is in a transaction.
func TestOwners(t *testing.T) {
	p, dsn := through(t)
	var mu sync.Mutex
	asked := map[netip.AddrPort]int{}
	p.Owners(func(ctx context.Context, client, proxy netip.AddrPort) int {
		mu.Lock()
		defer mu.Unlock()
		if proxy.String() != p.Addr() {
			t.Errorf("asked with the proxy at %s, want %s", proxy, p.Addr())
		}
		asked[client] = len(asked) + 10
		return asked[client]
	})
	a := connect(t, dsn)
	b := connect(t, dsn)
	tbl := table(t, a)
	ctx := context.Background()
	w, err := p.Watch(nil, "evt-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('evt-1', 1)"); err != nil {
		t.Fatal(err)
	}
	tx, err := b.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ('evt-1-b', 1) ON CONFLICT DO NOTHING"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 'evt-1'"); err != nil {
		t.Fatal(err)
	}
	over := w.Over(0)
	time.Sleep(20 * time.Millisecond)
	quiet := w.Over(10 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	after := w.Over(0)
	trace := w.Stop()
	if len(trace) != 5 {
		t.Fatalf("want 5 statements (insert, begin, insert, select, commit), got %d: %+v", len(trace), trace)
	}
	byConn := map[int]int{}
	for _, st := range trace {
		if st.Owner < 10 {
			t.Errorf("statement %q has owner %d, want the owner function's answer", st.Text, st.Owner)
		}
		if o, ok := byConn[st.Conn]; ok && o != st.Owner {
			t.Errorf("connection %d has owners %d and %d", st.Conn, o, st.Owner)
		}
		byConn[st.Conn] = st.Owner
		if got := p.Owner(st.Conn, time.Second); got != st.Owner {
			t.Errorf("Owner(%d) = %d, want %d", st.Conn, got, st.Owner)
		}
	}
	if len(byConn) != 2 || byConn[trace[0].Conn] == byConn[trace[1].Conn] {
		t.Errorf("want two connections with two owners, got %v", byConn)
	}
	ca, cb := trace[0].Conn, trace[1].Conn
	for _, tt := range []struct {
		name   string
		got    map[int]bool
		wa, wb bool
	}{
		{"b in its transaction", over, true, false},
		{"quiet for 10ms, b still in it", quiet, true, false},
		{"b committed", after, true, true},
	} {
		if tt.got[ca] != tt.wa || tt.got[cb] != tt.wb {
			t.Errorf("%s: Over = %v, want a %v and b %v", tt.name, tt.got, tt.wa, tt.wb)
		}
	}
	if p.Owner(9999, 0) != 0 {
		t.Error("an unknown connection has an owner")
	}
}
