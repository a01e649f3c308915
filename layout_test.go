package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDependenciesPointOneWay: the packages that render output never reach
// a database driver, and the replay engine reaches its store only through
// the ledger interface, never through an adapter. No broker client is
// linked by the file format, the replay or the reports: broker addresses
// and names are checked in pkg/broker, which links none, and the
// adapters register the logs they read (nats://, kafka://) with the
// capture readers.
func TestDependenciesPointOneWay(t *testing.T) {
	t.Parallel()
	drivers := []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/go-sql-driver/mysql"}
	adapters := []string{"github.com/redeliver/redeliver/pkg/sqlite", "github.com/redeliver/redeliver/pkg/postgres"}
	brokers := []string{"github.com/twmb/franz-go", "github.com/nats-io/nats.go", "github.com/rabbitmq/amqp091-go",
		"github.com/redeliver/redeliver/pkg/kafka", "github.com/redeliver/redeliver/pkg/nats", "github.com/redeliver/redeliver/pkg/amqp"}
	join := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{"./pkg/report", join(drivers, adapters, brokers)},
		{"./pkg/replay", join(drivers, adapters, brokers)},
		{"./pkg/invariant", join(drivers, adapters, brokers)},
		{"./pkg/scenario", join(drivers, adapters, brokers)},
		{"./pkg/broker", brokers},
		{"./pkg/capture", join(drivers, adapters, brokers)},
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
