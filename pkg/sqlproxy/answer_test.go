package sqlproxy

import (
	"context"
	"testing"
	"time"
)

// finishedWithin polls w.Finished(quiet) until it is true, or limit passed.
func finishedWithin(w *Watch, quiet, limit time.Duration) bool {
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if w.Finished(quiet) {
			return true
		}
	}
	return false
}

// watching starts a watch that is stopped when the test ends, however it
// ends, so that a failed subtest leaves the proxy free for the next.
func watching(t *testing.T, p *Proxy, b *Boundary, id, key string) *Watch {
	t.Helper()
	w, err := p.Watch(b, id, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	return w
}

// TestFollowedPastTheAnswer: a watch goes on after the consumer's answer.
// A consumer that answers first and then commits sends its transaction
// after the answer: those statements are marked AfterAnswer, and the
// watch is not finished while the transaction is open, nor before no
// statement came for the quiet time. One that commits and then answers
// has no statement after the answer, and is finished once quiet.
func TestFollowedPastTheAnswer(t *testing.T) {
	p, dsn := through(t)
	c := connect(t, dsn)
	tbl := table(t, c)
	ctx := context.Background()
	const quiet = 100 * time.Millisecond

	t.Run("answers, then commits", func(t *testing.T) {
		w := watching(t, p, nil, "evt-a", "O-a")
		if _, err := c.Exec(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = $1", "evt-a"); err != nil {
			t.Fatal(err)
		}
		if w.Finished(0) {
			t.Fatal("finished before the consumer answered")
		}
		w.Answered()
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-a"); err != nil {
			t.Fatal(err)
		}
		if finishedWithin(w, quiet, 3*quiet) {
			t.Fatal("finished while the delivery's transaction was open")
		}
		if !w.InTransaction() {
			t.Fatal("InTransaction is false inside the delivery's transaction")
		}
		committing := time.Now()
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// Finished can only be known early while the quiet time since the
		// COMMIT went out has not passed: a test descheduled for longer
		// has nothing to check here.
		if w.Finished(quiet) && time.Since(committing) < quiet {
			t.Fatal("finished at once after the commit, before the quiet time")
		}
		if !finishedWithin(w, quiet, 5*time.Second) {
			t.Fatal("not finished after the commit and the quiet time")
		}
		if w.InTransaction() {
			t.Fatal("InTransaction is true after the commit")
		}
		got := w.Stop()
		want := []bool{false, true, true, true}
		if len(got) != len(want) {
			t.Fatalf("statements:\n%s\nwant %d", traceOf(got), len(want))
		}
		for i, st := range got {
			if st.AfterAnswer != want[i] {
				t.Errorf("statement %d (%s): AfterAnswer %v, want %v", st.Index, st.Text, st.AfterAnswer, want[i])
			}
		}
	})

	t.Run("commits, then answers", func(t *testing.T) {
		w := watching(t, p, nil, "evt-b", "O-b")
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-b"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		w.Answered()
		if !finishedWithin(w, quiet, 5*time.Second) {
			t.Fatal("not finished after the answer and the quiet time")
		}
		got := w.Stop()
		if len(got) != 3 {
			t.Fatalf("statements:\n%s\nwant 3", traceOf(got))
		}
		for _, st := range got {
			if st.AfterAnswer {
				t.Errorf("statement %d (%s) is marked after the answer", st.Index, st.Text)
			}
		}
	})

	t.Run("held at the commit after the answer", func(t *testing.T) {
		w := watching(t, p, &Boundary{Words: "commit", Marked: true}, "evt-c", "O-c")
		w.Answered()
		done := make(chan error, 1)
		go func() {
			tx, err := c.Begin(ctx)
			if err != nil {
				done <- err
				return
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+tbl+" (k, n) VALUES ($1, 1)", "evt-c"); err != nil {
				done <- err
				return
			}
			done <- tx.Commit(ctx)
		}()
		heldOrFail(t, w, done, "before COMMIT after the answer")
		if hit := w.Hit(); hit == nil || !hit.AfterAnswer {
			t.Fatalf("held at %+v, want a statement after the answer", hit)
		}
		w.Cut()
		<-done
		w.Stop()
		admin := connect(t, server(t).String())
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM "+tbl+" WHERE k = 'evt-c'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Fatalf("the transaction cut before its COMMIT left %d rows", n)
		}
	})
}
