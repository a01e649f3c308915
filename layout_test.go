package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay: the packages that render output never reach
// a database driver, and the replay engine reaches its store only through
// the ledger interface, never through an adapter.
func TestDependenciesPointOneWay(t *testing.T) {
	t.Parallel()
	drivers := []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/go-sql-driver/mysql"}
	adapters := []string{"github.com/redeliver/redeliver/pkg/sqlite", "github.com/redeliver/redeliver/pkg/postgres"}
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{"./pkg/report", append(append([]string{}, drivers...), adapters...)},
		{"./pkg/replay", append(append([]string{}, drivers...), adapters...)},
		{"./pkg/invariant", append(append([]string{}, drivers...), adapters...)},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", tt.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, out)
			}
			for _, dep := range strings.Fields(string(out)) {
				for _, f := range tt.forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						t.Errorf("%s depends on %s", tt.pkg, dep)
					}
				}
			}
		})
	}
}

// TestBuildsOnEveryOS: the module builds for Windows and macOS as well as
// Linux. What only Linux has (the supervisor, /proc, process groups, file
// locks, the peak memory of a child) sits behind build tags, and a feature
// that cannot work elsewhere says so instead of failing to compile.
func TestBuildsOnEveryOS(t *testing.T) {
	t.Parallel()
	for _, goos := range []string{"windows", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			c := exec.Command("go", "build", "./...")
			c.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s go build ./...: %v\n%s", goos, err, out)
			}
		})
	}
}
