package sqlproxy

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestBackendsAndCancel: the proxy lists the server process of each
// connection, open or not, and Cancel ends what one runs, as a client's
// own cancel request would.
func TestBackendsAndCancel(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	pid := int32(c.PgConn().PID())
	listed := func() (Backend, bool) {
		for _, b := range p.Backends() {
			if b.PID == pid {
				return b, true
			}
		}
		return Backend{}, false
	}
	b, ok := listed()
	if !ok || !b.Open {
		t.Fatalf("backend %d listed %v, open %v; want listed and open", pid, ok, b.Open)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), "SELECT pg_sleep(17.5)")
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Cancel(ctx, b); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "canceling statement") {
			t.Fatalf("the sleep ended with %v, want the server's cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sleep still runs 5 s after the cancel")
	}
	c.Close(context.Background())
	deadline := time.Now().Add(5 * time.Second)
	for b, _ = listed(); b.Open; b, _ = listed() {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection's backend is still listed as open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Forget([]int32{pid})
	if _, ok := listed(); ok {
		t.Errorf("backend %d is still listed after Forget", pid)
	}
}
