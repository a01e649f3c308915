package cmd

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDescribeBuild: the commit comes from the build flags, else from the
// VCS stamp of a build from a clone; one nobody recorded is left out.
func TestDescribeBuild(t *testing.T) {
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	module := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}
	tests := []struct {
		name, version, commit string
		info                  *debug.BuildInfo
		want                  string
	}{
		{"set at build time", "v1.0.0", "def456", stamped, "redeliver v1.0.0 (commit def456-dirty, " + runtime.Version() + ")"},
		{"VCS stamp of a clone", "dev", "", stamped, "redeliver dev (commit abc123-dirty, " + runtime.Version() + ")"},
		{"go install of a module", "dev", "", module, "redeliver v1.2.0 (" + runtime.Version() + ")"},
		{"no build information", "dev", "", nil, "redeliver dev (" + runtime.Version() + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeBuild(tt.version, tt.commit, tt.info); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestVersionFlag: --version prints what the version command prints, and
// neither says "unknown".
func TestVersionFlag(t *testing.T) {
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		s := &Streams{In: strings.NewReader(""), Out: &out, Err: &errOut, Getenv: func(string) string { return "" }}
		if code := Run(context.Background(), s, args); code != ExitPass {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut.String())
		}
		if strings.Contains(out.String(), "unknown") || !strings.HasPrefix(out.String(), "redeliver ") {
			t.Errorf("%v printed %q", args, out.String())
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] {
		t.Errorf("version printed %q, --version %q", outs[0], outs[1])
	}
}
