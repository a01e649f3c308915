package effects

import (
	"context"
	"database/sql"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestMySQLThreads: on MySQL, Busy lists the threads inside a
// transaction or running a statement, Blocked sees one waiting for a row
// lock another holds, and Terminate kills them, rolling back what they
// held.
func TestMySQLThreads(t *testing.T) {
	dsn := mysqlDSN(t)
	ctx := context.Background()
	d, err := Open(ctx, &scenario.Effects{DB: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	setup(t, MySQL, dsn, "threads_test")
	_, native, _, _ := parse(dsn)
	client, err := sql.Open("mysql", native)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	thread := func(c *sql.Conn) int32 {
		var id int32
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	holder, _ := client.Conn(ctx)
	waiter, _ := client.Conn(ctx)
	idle, _ := client.Conn(ctx)
	defer holder.Close()
	defer waiter.Close()
	defer idle.Close()
	h, w, i := thread(holder), thread(waiter), thread(idle)
	if _, err := holder.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, "UPDATE threads_test SET amount = 11 WHERE event_id = 'e-1'"); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := waiter.ExecContext(ctx, "UPDATE threads_test SET amount = 12 WHERE event_id = 'e-1'")
		waited <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		blocked, err := d.Blocked(ctx, []int32{w})
		if err != nil {
			t.Fatal(err)
		}
		if blocked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Blocked never saw the waiting update")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(blockedEvery)
	if blocked, _ := d.Blocked(ctx, []int32{h, i}); blocked {
		t.Error("Blocked says the lock holder or the idle thread waits")
	}
	busy, err := d.Busy(ctx, []int32{h, w, i})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(busy)
	want := []int32{h, w}
	slices.Sort(want)
	if !slices.Equal(busy, want) {
		t.Fatalf("Busy = %v, want the holder and the waiter %v, not the idle %d", busy, want, i)
	}
	if err := d.Terminate(ctx, []int32{h, w, 1 << 30}); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err == nil {
		t.Error("the waiting update went on after its thread was killed")
	}
	var amount int
	if err := d.s.conn().QueryRowContext(ctx, "SELECT amount FROM threads_test WHERE event_id = 'e-1'").Scan(&amount); err != nil || amount != 10 {
		t.Fatalf("after the kill the row holds %d (%v), want 10: the holder's update rolled back", amount, err)
	}
	// A killed thread ends once it sees its flag, a moment after the
	// KILL returned (its rollback is done: the row holds 10 above).
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		busy, err := d.Busy(ctx, []int32{h, w})
		if err != nil {
			t.Fatal(err)
		}
		if len(busy) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("Busy 5s after the kill = %v", busy)
		}
	}
}

// mysqlDSN is the MySQL or MariaDB server the MySQL effects tests run
// against (REDELIVER_TEST_MYSQL); without it they are skipped, but under
// CI=true, where they fail.
func mysqlDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_MYSQL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("REDELIVER_TEST_MYSQL is not set under CI=true")
		}
		t.Skip("set REDELIVER_TEST_MYSQL to run the MySQL effects tests")
	}
	return dsn
}
