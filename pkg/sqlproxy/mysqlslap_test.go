package sqlproxy

import (
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// mysqlslap runs the MySQL client's load emulator against 127.0.0.1:port
// with the test server's user, and returns its output: an auto-generated
// mixed load (a table, writes and reads), its schema of its own.
func mysqlslap(t *testing.T, port string, args ...string) string {
	t.Helper()
	cfg := mysqlServer(t)
	base := []string{"-h", "127.0.0.1", "-P", port, "--protocol=TCP", "-u", cfg.User, "--create-schema=myproxy_slap",
		"--auto-generate-sql", "--auto-generate-sql-load-type=mixed", "--auto-generate-sql-add-autoincrement"}
	if cfg.Passwd != "" {
		base = append(base, "-p"+cfg.Passwd)
	}
	out, err := exec.Command("mysqlslap", append(base, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("mysqlslap %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func needMysqlslap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("mysqlslap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but mysqlslap is not installed (mariadb-client)")
		}
		t.Skip("mysqlslap is not installed (mariadb-client or mysql-client)")
	}
}

// slapSeconds is the average time mysqlslap reports for its queries.
var slapSeconds = regexp.MustCompile(`Average number of seconds to run all queries: ([0-9.]+) seconds`)

// TestMysqlslap: the MySQL client's load emulator runs through the proxy
// with no error: 4 clients, a mixed load of inserts and selects.
func TestMysqlslap(t *testing.T) {
	needMysqlslap(t)
	p, _ := mysqlThrough(t)
	_, port, _ := strings.Cut(p.Addr(), ":")
	out := mysqlslap(t, port, "--concurrency=4", "--iterations=2", "--number-of-queries=400")
	if !slapSeconds.MatchString(out) {
		t.Fatalf("mysqlslap through the proxy:\n%s", out)
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMysqlslapLatency compares mysqlslap's average time straight to the
// server and through the proxy, alternating, MYSQLSLAP_ROUNDS rounds (4
// clients, a mixed load of MYSQLSLAP_QUERIES queries), and logs each pair
// and the median ratio. It measures and asserts nothing: set
// MYSQLSLAP_COMPARE=1 to run it (docs/statements.md quotes it).
func TestMysqlslapLatency(t *testing.T) {
	if os.Getenv("MYSQLSLAP_COMPARE") == "" {
		t.Skip("set MYSQLSLAP_COMPARE=1 to compare mysqlslap's time with and without the proxy")
	}
	needMysqlslap(t)
	p, _ := mysqlThrough(t)
	_, proxied, _ := strings.Cut(p.Addr(), ":")
	_, direct, _ := strings.Cut(mysqlServer(t).Addr, ":")
	queries := os.Getenv("MYSQLSLAP_QUERIES")
	if queries == "" {
		queries = "20000"
	}
	rounds, _ := strconv.Atoi(os.Getenv("MYSQLSLAP_ROUNDS"))
	if rounds < 1 {
		rounds = 3
	}
	var ratios []float64
	for r := 0; r < rounds; r++ {
		var s [2]float64
		for i, port := range []string{direct, proxied} {
			out := mysqlslap(t, port, "--concurrency=4", "--iterations=1", "--number-of-queries="+queries)
			m := slapSeconds.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no time in:\n%s", out)
			}
			s[i], _ = strconv.ParseFloat(m[1], 64)
		}
		ratios = append(ratios, s[1]/s[0])
		t.Logf("round %d: direct %.3f s, through the proxy %.3f s: %.2f×", r+1, s[0], s[1], s[1]/s[0])
	}
	sort.Float64s(ratios)
	t.Logf("median ratio over %d rounds: %.2f×", rounds, ratios[len(ratios)/2])
}
