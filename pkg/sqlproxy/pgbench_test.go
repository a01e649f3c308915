package sqlproxy

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pgbench runs PostgreSQL's own benchmark client against host:port in a
// schema of the test's own, and returns its output.
func pgbench(t *testing.T, port int, args ...string) string {
	t.Helper()
	u := server(t)
	cmd := exec.Command("pgbench", append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", u.User.Username()}, append(args, strings.TrimPrefix(u.Path, "/"))...)...)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path=sqlproxy_bench", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestPgbench: PostgreSQL's own benchmark runs through the proxy with no
// error — its initialisation (COPY included), then its TPC-B-like load
// from 4 clients in each query mode (simple, extended, prepared), 50
// transactions each: a run of a fixed size rather than of seconds at
// full speed, which would take both cores from the tests beside it.
// PGBENCH_TRANSACTIONS sets the count.
func TestPgbench(t *testing.T) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but pgbench is not installed (postgresql-client)")
		}
		t.Skip("pgbench is not installed")
	}
	p, _ := through(t)
	admin := connect(t, server(t).String())
	if _, err := admin.Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS sqlproxy_bench"); err != nil {
		t.Fatal(err)
	}
	transactions := os.Getenv("PGBENCH_TRANSACTIONS")
	if transactions == "" {
		transactions = "50"
	}
	pgbench(t, p.Port(), "-i", "-q", "-s", "1")
	failed := regexp.MustCompile(`number of failed transactions: 0 `)
	processed := regexp.MustCompile(`number of transactions actually processed: ([0-9]+)/([0-9]+)`)
	for _, mode := range []string{"simple", "extended", "prepared"} {
		out := pgbench(t, p.Port(), "-n", "-M", mode, "-c", "4", "-j", "2", "-t", transactions)
		if m := processed.FindStringSubmatch(out); !failed.MatchString(out) || m == nil || m[1] != m[2] {
			t.Errorf("pgbench -M %s through the proxy:\n%s", mode, out)
		}
		if testing.Verbose() {
			t.Logf("-M %s:\n%s", mode, out)
		}
	}
}

// TestPgbenchLatency compares pgbench's average latency straight to the
// server and through the proxy, alternating, PGBENCH_ROUNDS rounds of
// PGBENCH_SECONDS each (4 clients, prepared statements), and logs each
// pair and the median ratio. It measures and asserts nothing: set
// PGBENCH_COMPARE=1 to run it (docs/statements.md quotes it).
func TestPgbenchLatency(t *testing.T) {
	if os.Getenv("PGBENCH_COMPARE") == "" {
		t.Skip("set PGBENCH_COMPARE=1 to compare pgbench's latency with and without the proxy")
	}
	p, _ := through(t)
	admin := connect(t, server(t).String())
	if _, err := admin.Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS sqlproxy_bench"); err != nil {
		t.Fatal(err)
	}
	seconds := os.Getenv("PGBENCH_SECONDS")
	if seconds == "" {
		seconds = "30"
	}
	rounds, _ := strconv.Atoi(os.Getenv("PGBENCH_ROUNDS"))
	if rounds < 1 {
		rounds = 3
	}
	direct := 5432
	if port := server(t).Port(); port != "" {
		direct, _ = strconv.Atoi(port)
	}
	pgbench(t, direct, "-i", "-q", "-s", "4")
	lat := regexp.MustCompile(`latency average = ([0-9.]+) ms`)
	var ratios []float64
	for r := 0; r < rounds; r++ {
		var ms [2]float64
		for i, port := range []int{direct, p.Port()} {
			out := pgbench(t, port, "-n", "-M", "prepared", "-c", "4", "-j", "2", "-T", seconds)
			m := lat.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no latency in:\n%s", out)
			}
			ms[i], _ = strconv.ParseFloat(m[1], 64)
		}
		ratios = append(ratios, ms[1]/ms[0])
		t.Logf("round %d: direct %.3f ms, through the proxy %.3f ms: %.2f×", r+1, ms[0], ms[1], ms[1]/ms[0])
	}
	sort.Float64s(ratios)
	t.Logf("median ratio over %d rounds: %.2f×", rounds, ratios[len(ratios)/2])
}
