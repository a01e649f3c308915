package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

// openReplayT opens a replay database at path (Memory, or a file) for
// cfg, closed when the test ends.
func openReplayT(t testing.TB, path string, cfg handler.Config) *ReplayDB {
	t.Helper()
	db, err := OpenReplay(context.Background(), path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fixedClock is the handler's clock in these tests.
func fixedClock() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// runRaw makes the replay store run its statements through the C API
// (raw.go), or through the driver, until the test ends.
func runRaw(t testing.TB, on bool) {
	was := useRaw
	useRaw = on
	t.Cleanup(func() { useRaw = was })
}
