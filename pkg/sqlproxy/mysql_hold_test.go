package sqlproxy

import (
	"context"
	"testing"
	"time"
)

// TestMySQLHoldAndRelease: the twin of TestHoldAndRelease on MySQL or
// MariaDB: a held connection let go carries on as if it had never been
// held, before or after the statement, in both protocols.
func TestMySQLHoldAndRelease(t *testing.T) {
	for _, binary := range []bool{false, true} {
		for _, after := range []bool{false, true} {
			p, admin, tbl, db := mysqlHeldSetup(t, binary)
			w, err := p.Watch(&Boundary{Words: "insert", After: after})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := db.Exec("INSERT INTO "+tbl+" (k, n) VALUES (?, 1)", "a")
				done <- err
			}()
			heldOrFail(t, w, done, "the insert")
			select {
			case err := <-done:
				t.Fatalf("binary %v, after %v: the insert returned (%v) while held", binary, after, err)
			case <-time.After(50 * time.Millisecond):
			}
			w.Release()
			if err := <-done; err != nil {
				t.Fatalf("binary %v, after %v: after the release: %v", binary, after, err)
			}
			st := w.Stop()
			if len(st) != 1 || st[0].Answer != "INSERT 1" {
				t.Fatalf("binary %v, after %v: trace %+v", binary, after, st)
			}
			if n := mysqlCount(t, admin, tbl); n != 1 {
				t.Fatalf("binary %v, after %v: %d rows after the release, want 1", binary, after, n)
			}
		}
	}
}

// TestMySQLHeldBeforeMeansNotRun: the twin of TestHeldBeforeMeansNotRun
// on MySQL or MariaDB: a SELECT held before it reaches the server runs,
// once let go, as if it had been sent then: held while another connection
// commits a row, it sees the row, in both protocols (the binary one's
// prepare goes through; its execute is what is held).
func TestMySQLHeldBeforeMeansNotRun(t *testing.T) {
	for _, binary := range []bool{false, true} {
		p, admin, tbl, db := mysqlHeldSetup(t, binary)
		w, err := p.Watch(&Boundary{Words: "select count"})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan int, 1)
		done := make(chan error, 1)
		go func() {
			var n int
			err := db.QueryRow("SELECT count(*) FROM "+tbl+" WHERE k = ?", "a").Scan(&n)
			if err != nil {
				n = -1
			}
			got <- n
			done <- err
		}()
		heldOrFail(t, w, done, "the select")
		if _, err := admin.Exec("INSERT INTO " + tbl + " (k, n) VALUES ('a', 1)"); err != nil {
			t.Fatal(err)
		}
		w.Release()
		if n := <-got; n != 1 {
			t.Errorf("binary %v: the SELECT let go after the commit counted %d rows, want 1 (%v)", binary, n, <-done)
		}
		w.Stop()
	}
}

// TestMySQLCloseWhileHeld: the twin of TestCloseWhileHeld on MySQL or
// MariaDB: closing the proxy while a connection is held at a boundary
// (the run interrupted mid-race) ends everything at once.
func TestMySQLCloseWhileHeld(t *testing.T) {
	p, cfg := mysqlThrough(t)
	db := mysqlOpen(t, cfg)
	w, err := p.Watch(&Boundary{Words: "select"})
	if err != nil {
		t.Fatal(err)
	}
	execd := make(chan error, 1)
	go func() { _, err := db.ExecContext(context.Background(), "SELECT 1"); execd <- err }()
	heldOrFail(t, w, execd, "the select")
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
