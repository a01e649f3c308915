package cmd

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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
