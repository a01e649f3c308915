package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/bench"
)

// TestReplayProgress: the progress line goes to stderr only when stderr is a
// terminal; the report on stdout is the same either way.
func TestReplayProgress(t *testing.T) {
	capture := filepath.Join("..", "testdata", "capture", "cloudevents.ndjson")
	tests := []struct {
		name     string
		errTTY   bool
		progress bool
	}{
		{"terminal", true, true},
		{"not a terminal", false, false},
	}
	var reports []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			s := &Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, ErrTTY: tt.errTTY, Getenv: func(string) string { return "" }}
			if code := Run(context.Background(), s, []string{"replay", "--strategy", "business-key", capture}); code != ExitPass {
				t.Fatalf("exit %d, stderr %q", code, errOut.String())
			}
			if got := strings.Contains(errOut.String(), "replaying"); got != tt.progress {
				t.Errorf("progress on stderr: %v, want %v (stderr %q)", got, tt.progress, errOut.String())
			}
			// A file of known size: the line shows the bytes read of its size.
			if tt.progress && !regexp.MustCompile(`\( *[0-9.]+ [kMG]?B/[0-9.]+ [kMG]?B`).MatchString(errOut.String()) {
				t.Errorf("progress line without bytes read of the total: %q", errOut.String())
			}
			if !tt.progress && errOut.Len() > 0 {
				t.Errorf("stderr %q, want nothing", errOut.String())
			}
			reports = append(reports, out.String())
		})
	}
	if len(reports) == 2 && reports[0] != reports[1] {
		t.Errorf("the report differs with a terminal:\n%s\nwithout:\n%s", reports[0], reports[1])
	}
}

// TestReplaySplitIsOneStore: a capture large enough to be split (in memory,
// on a machine with more than one core) is reported as the same capture
// replayed onto a --db file, which is never split, but for the store and
// the time taken.
func TestReplaySplitIsOneStore(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "uuid.ndjson")
	var b bytes.Buffer
	if err := bench.WriteCapture(&b, 6500, 1, bench.UUID); err != nil {
		t.Fatal(err)
	}
	if b.Len() < 1<<20 {
		t.Fatalf("the capture is %d bytes, too small to be split", b.Len())
	}
	if err := os.WriteFile(capture, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// In memory the progress line is on: the parts report to it side by side.
	replay := func(db ...string) map[string]any {
		var out, errOut bytes.Buffer
		s := &Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, ErrTTY: len(db) == 0, Getenv: func(string) string { return "" }}
		args := append([]string{"replay", "--strategy", "none", "--redeliver", "0.2", "--crash", "0.1", "--republish", "0.05", "--format", "json", capture}, db...)
		if code := Run(context.Background(), s, args); code != ExitFail {
			t.Fatalf("exit %d, want %d (duplicate-effect), stderr %q", code, ExitFail, errOut.String())
		}
		// (Whether the parts' counts get drawn depends on the replay
		// outlasting the bar's throttle; the callbacks run either way.)
		if progress := strings.Contains(errOut.String(), "replaying"); progress != s.ErrTTY {
			t.Errorf("progress line %v, want %v: %q", progress, s.ErrTTY, errOut.String())
		}
		var rep map[string]any
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		delete(rep, "store")
		delete(rep, "duration_seconds")
		return rep
	}
	memory, file := replay(), replay("--db", filepath.Join(dir, "replay.db"))
	if !reflect.DeepEqual(memory, file) {
		m, _ := json.MarshalIndent(memory, "", "  ")
		f, _ := json.MarshalIndent(file, "", "  ")
		t.Errorf("in memory:\n%s\non a file:\n%s", m, f)
	}
}

// TestOneProcessor: a replay into a target runs Go code on one processor
// and gives the scheduler back as it was; GOMAXPROCS, when set, stands.
func TestOneProcessor(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	for _, env := range []string{"", "3"} {
		t.Setenv("GOMAXPROCS", env)
		restore := oneProcessor()
		want := 1
		if env != "" {
			want = was
		}
		if n := runtime.GOMAXPROCS(0); n != want {
			t.Errorf("GOMAXPROCS=%q: %d processors during the replay, want %d", env, n, want)
		}
		restore()
		if n := runtime.GOMAXPROCS(0); n != was {
			t.Errorf("GOMAXPROCS=%q: %d processors after the replay, want %d back", env, n, was)
		}
	}
}
