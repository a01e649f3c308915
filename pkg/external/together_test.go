package external

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestConcurrentExecReadsTogether: the processes of a concurrent exec
// step read the event only once every one of them has started, however
// far apart they started (here 150 ms each, as on a loaded machine):
// without that, the first had answered before the last began, and a
// consumer's window between its check and its act was never raced.
func TestConcurrentExecReadsTogether(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Each process notes when it had read its stdin.
	script := `cat >/dev/null; date +%s%N > "$DIR/read.$$"`
	d := &execDeliverer{spec: &scenario.ExecTarget{
		Command: []string{"sh", "-c", script},
		Env:     map[string]string{"DIR": dir},
		Timeout: 30 * time.Second,
	}}
	const n = 4
	ctx := startTogether(context.Background(), n)
	var wg sync.WaitGroup
	calls := make([]int64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			calls[i] = time.Now().UnixNano()
			if a := d.Deliver(ctx, Event{ID: "evt-" + strconv.Itoa(i)}, nil); a.Kind != Acked {
				t.Errorf("delivery %d: %v", i, a)
			}
		}()
	}
	wg.Wait()
	if first, last := earliest(t, dir, "read.*", n), slices.Max(calls); first < last {
		t.Errorf("a process read the event %v before the last one was started", time.Duration(last-first))
	}
}

// earliest is the earliest of the nanosecond times in the n files of dir
// matching glob.
func earliest(t *testing.T, dir, glob string, n int) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, glob))
	if len(files) != n {
		t.Fatalf("%d files %s, want %d", len(files), glob, n)
	}
	var out int64
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 || v < out {
			out = v
		}
	}
	return out
}
