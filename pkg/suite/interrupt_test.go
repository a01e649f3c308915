package suite

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLoadReturnsWhenInterrupted: a scenario path that is a FIFO nobody
// writes blocks its read; an interrupt still ends Load.
func TestLoadReturnsWhenInterrupted(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "blocked.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Load(ctx, []string{fifo})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Load: %v, want context.Canceled", err)
	}
}
