package effects

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestMain runs this test binary as a guardian when a test started one.
func TestMain(m *testing.M) {
	if code, ok := RunGuardian(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestGuardianEndsWhatItWasToldOf: a guardian whose pipe ends without a
// word (redeliver died) kills the threads it was told of and not told
// ended, and leaves the others; one told to stop kills nothing.
func TestGuardianEndsWhatItWasToldOf(t *testing.T) {
	dsn := mysqlDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := Open(ctx, &scenario.Effects{DB: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, native, _, _ := parse(dsn)
	client, err := sql.Open("mysql", native)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	// thread is a connection asleep in the database, and its id.
	thread := func() (*sql.Conn, int32) {
		c, err := client.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var id int32
		if err := c.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		go c.ExecContext(ctx, "SELECT SLEEP(60)")
		t.Cleanup(func() { d.Terminate(context.Background(), []int32{id}); c.Close() })
		return c, id
	}
	alive := func(id int32) bool {
		var n int
		if err := d.s.conn().QueryRowContext(ctx, "SELECT count(*) FROM information_schema.processlist WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	for _, tt := range []struct {
		name string
		stop bool
	}{
		{"redeliver died", false},
		{"redeliver stopped it", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, told := thread()
			_, forgotten := thread()
			_, untold := thread()
			g, err := d.StartGuardian()
			if err != nil || g == nil {
				t.Fatalf("no guardian: %v", err)
			}
			g.Track(told, true)
			g.Track(forgotten, true)
			g.Track(forgotten, false)
			if tt.stop {
				g.Stop()
			} else {
				// What the kernel does to the pipe when redeliver dies.
				g.mu.Lock()
				g.w.Close()
				g.w = nil
				g.mu.Unlock()
				g.cmd.Wait()
			}
			if got := alive(told); got != tt.stop {
				t.Errorf("the thread it was told of is there: %v, want %v", got, tt.stop)
			}
			if !alive(forgotten) || !alive(untold) {
				t.Errorf("a thread it was told ended (%v) or not told of (%v) was killed", !alive(forgotten), !alive(untold))
			}
		})
	}
}
