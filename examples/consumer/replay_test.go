package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeCapture writes n CloudEvents, one order each, as NDJSON.
func writeCapture(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order.paid","time":"2026-01-01T00:00:00Z","datacontenttype":"application/json","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, 1+i%500)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// replayLines is the capture size of TestReplayIntoConsumer: 500 lines
// (2,000 under REDELIVER_TEST_HEAVY=all) make about 50 redeliveries, 5
// crashes and 25 concurrent duplicates, and the test asserts that crashes
// happened; make bench runs BenchmarkReplayIntoConsumer on 100,000.
func replayLines() int { return scaled(500, 2000) }

// crashesRe reads off a target replay's summary line how many of its
// crashes came before the consumer's answer: only those interrupted a
// delivery.
var crashesRe = regexp.MustCompile(`, \d+ crash(?:es)? \((\d+) before the answer|, (\d+) crash(?:es)? before the answer\)`)

// TestReplayIntoConsumer replays a capture into the started consumer with
// seeded redeliveries and crashes (safe: passes), and with concurrent
// duplicates (check-then-act: caught). The two replays go side by side.
func TestReplayIntoConsumer(t *testing.T) {
	defer parallel(t)()
	bin := buildConsumer(t)
	capture := filepath.Join(t.TempDir(), "capture.ndjson")
	lines := replayLines()
	writeCapture(t, capture, lines)
	tests := []struct {
		name, flaw, work string
		flags            []string
		exit             int
		invariant        string
	}{
		// The work keeps a delivery in flight long enough for some of the
		// kills (0–100 ms in) to come before the answer.
		{"safe/redeliver-0.1-crash-0.01", "safe", "60ms", []string{"--redeliver", "0.1", "--crash", "0.01"}, 0, ""},
		{"check-then-act/concurrent-0.05/duplicate-effect", "check-then-act", "20ms", []string{"--concurrent", "0.05"}, 1, "duplicate-effect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer parallel(t)()
			env := consumerEnv(t, bin, tt.flaw)
			env["WORK"] = tt.work
			withPlainRedeliver(t, env)
			args := append([]string{"replay", capture, "--target", "examples/consumer/target.yaml", "--seed", "11", "--parallel", "4"}, tt.flags...)
			o := redeliver(t, env, args...)
			if o.exit != tt.exit || (tt.invariant != "" && !strings.Contains(o.stdout, "invariant "+tt.invariant+" broken")) {
				t.Fatalf("want exit %d naming %q, got\n%s", tt.exit, tt.invariant, o)
			}
			if tt.exit == 0 {
				assertNoViolations(t, o.stdout, lines)
				if m := crashesRe.FindStringSubmatch(o.stdout); m == nil {
					t.Errorf("want the consumer killed at least once before its answer (--crash), got\n%s", o)
				}
			}
		})
	}
}

var (
	crashBeforeRe = regexp.MustCompile(`(\d+) (?:crash(?:es)? )?before the answer`)
	crashAfterRe  = regexp.MustCompile(`(\d+) (?:crash(?:es)? )?after\b`)
)

// crashFigures reads off a target replay's summary line how many crashes
// came before the consumer's answer and how many after it ("992 crashes
// (23 before the answer, 969 after)", "5 crashes after the answer").
func crashFigures(report string) (before, after int) {
	if m := crashBeforeRe.FindStringSubmatch(report); m != nil {
		before, _ = strconv.Atoi(m[1])
	}
	if m := crashAfterRe.FindStringSubmatch(report); m != nil {
		after, _ = strconv.Atoi(m[1])
	}
	return before, after
}

var (
	deliveriesRe = regexp.MustCompile(`(\d+) deliveries \(`)
	effectRowsRe = regexp.MustCompile(`(\d+) effect rows`)
)

// replayFigures reads the delivery and effect-row counts off the text
// report's summary line.
func replayFigures(tb testing.TB, report string) (deliveries, rows int) {
	tb.Helper()
	d, r := deliveriesRe.FindStringSubmatch(report), effectRowsRe.FindStringSubmatch(report)
	if d == nil || r == nil {
		tb.Fatalf("no delivery and effect row counts in the report:\n%s", report)
	}
	deliveries, _ = strconv.Atoi(d[1])
	rows, _ = strconv.Atoi(r[1])
	return deliveries, rows
}

// assertNoViolations: a passing replay with one effect row per captured
// event (0 duplicate and 0 lost effects), more deliveries than events
// (the redeliveries were made), and no invariant broken.
func assertNoViolations(tb testing.TB, report string, lines int) {
	tb.Helper()
	deliveries, rows := replayFigures(tb, report)
	if rows != lines || deliveries <= lines || strings.Contains(report, "broken") || !strings.Contains(report, "PASS") {
		tb.Errorf("want PASS with %d effect rows from more than %d deliveries, nothing broken; got %d rows from %d deliveries:\n%s", lines, lines, rows, deliveries, report)
	}
}

// BenchmarkReplayIntoConsumer is the large run (make bench): 100,000
// lines into the consumer on SQLite, safe with --redeliver 0.1 --crash
// 0.01 (must end with no duplicate and no lost effect), check-then-act
// with --concurrent 0.05 (must be caught), and the throughput of
// --parallel 1, 4 and 16 with the CPU time of redeliver beside the
// consumer's.
func BenchmarkReplayIntoConsumer(b *testing.B) {
	lines := 100000
	if s := os.Getenv("EXAMPLES_REPLAY_LINES"); s != "" {
		lines, _ = strconv.Atoi(s)
	}
	bin := buildConsumer(b)
	capture := filepath.Join(b.TempDir(), "capture.ndjson")
	writeCapture(b, capture, lines)

	b.Run("safe/redeliver-0.1-crash-0.01", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			env := consumerEnv(b, bin, "safe")
			if w := os.Getenv("EXAMPLES_REPLAY_WORK"); w != "" {
				env["WORK"] = w
			}
			o := redeliver(b, env, "replay", capture, "--target", "examples/consumer/target.yaml", "--seed", "11", "--parallel", "4", "--redeliver", "0.1", "--crash", "0.01")
			if o.exit != 0 {
				b.Fatalf("want exit 0, got\n%s", o)
			}
			assertNoViolations(b, o.stdout, lines)
			// A kill tests the consumer only if it lands before the answer:
			// at --work 0s the consumer answers within a millisecond, and
			// most kills (0–100 ms in) come after it.
			before, after := crashFigures(o.stdout)
			b.ReportMetric(float64(before), "crashes-before-answer")
			b.ReportMetric(float64(after), "crashes-after-answer")
		}
	})
	b.Run("check-then-act/concurrent-0.05", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			env := consumerEnv(b, bin, "check-then-act")
			env["WORK"] = "20ms"
			o := redeliver(b, env, "replay", capture, "--target", "examples/consumer/target.yaml", "--seed", "11", "--parallel", "16", "--concurrent", "0.05")
			if o.exit != 1 || !strings.Contains(o.stdout, "invariant duplicate-effect broken") {
				b.Fatalf("want exit 1 naming duplicate-effect, got\n%s", o)
			}
		}
	})
	// parallel-N: the consumer on SQLite; parallel-N-postgres: on
	// PostgreSQL (REDELIVER_TEST_POSTGRES), in a schema of its own;
	// parallel-4-floor: the same deliveries by the least sender
	// (floorSend) instead of redeliver, the floor beside its CPU.
	pg := os.Getenv("REDELIVER_TEST_POSTGRES")
	for _, parallel := range []int{1, 4, 16} {
		for _, onPG := range []bool{false, true} {
			for _, floor := range []bool{false, true} {
				name := fmt.Sprintf("parallel-%d", parallel)
				if floor {
					if parallel != 4 {
						continue
					}
					name += "-floor"
				}
				if onPG {
					if pg == "" {
						continue
					}
					name += "-postgres"
				}
				b.Run(name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						db := filepath.Join(b.TempDir(), "payments.db")
						if onPG {
							db = freshSchema(b, pg)
						}
						benchParallel(b, bin, capture, db, parallel, floor)
					}
				})
			}
		}
	}
}

// benchParallel runs the consumer on db (a SQLite file or a PostgreSQL
// URL) itself, so that its CPU time is its own, and replays into it with
// --redeliver 0.1, or with floor sends the same deliveries with
// floorSend; it reports deliveries/s and the sender's CPU time as a share
// of the consumer's.
func benchParallel(b *testing.B, bin, capture, db string, parallel int, floor bool) {
	port := freePort(b)
	target := filepath.Join(b.TempDir(), "target.yaml")
	os.WriteFile(target, []byte(fmt.Sprintf(`version: 1
target:
  http:
    url: http://127.0.0.1:%s/events
    timeout: 30s
effects:
  db: %q
  table: payments
  key: order_id
  event: event_id
  key_of: "{data.orderId}"
`, port, db)), 0o644)
	marker := newMarker()
	consumerCmd := exec.Command(bin, "--listen", "127.0.0.1:"+port, "--db", db)
	consumerCmd.Env = append(os.Environ(), runMarker+"="+marker)
	consumerCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := consumerCmd.Start(); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the consumer to answer /healthz", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	c, rmarker := redeliverCmd(nil, "replay", capture, "--target", target, "--seed", "11", "--parallel", strconv.Itoa(parallel), "--redeliver", "0.1")
	if floor {
		path, err := exec.LookPath("floorsender") // put on PATH by testscript.Main
		if err != nil {
			b.Fatal(err)
		}
		c.Path, c.Args = path, []string{"floorsender", "127.0.0.1:" + port, capture, strconv.Itoa(parallel)}
	}
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	wall := time.Since(start)
	assertNoneLeft(b, rmarker)
	syscall.Kill(-consumerCmd.Process.Pid, syscall.SIGTERM)
	consumerCmd.Wait()
	assertNoneLeft(b, marker)
	if exitOf(err) != 0 {
		b.Fatalf("replay --parallel %d: exit %d\n%s", parallel, exitOf(err), out.String())
	}
	cpu := func(ps *os.ProcessState) time.Duration { return ps.UserTime() + ps.SystemTime() }
	own, theirs := cpu(c.ProcessState), cpu(consumerCmd.ProcessState)
	who := "redeliver"
	var deliveries int
	if floor {
		who = "floor"
		if _, err := fmt.Sscanf(out.String(), "%d deliveries", &deliveries); err != nil {
			b.Fatalf("floorsender: %v\n%s", err, out.String())
		}
	} else {
		deliveries, _ = replayFigures(b, out.String())
	}
	b.ReportMetric(float64(deliveries)/wall.Seconds(), "deliveries/s")
	b.ReportMetric(100*own.Seconds()/theirs.Seconds(), who+"-cpu-%-of-consumer")
	b.ReportMetric(own.Seconds(), who+"-cpu-s")
	b.ReportMetric(theirs.Seconds(), "consumer-cpu-s")
}

func TestCrashFigures(t *testing.T) {
	for _, c := range []struct {
		line          string
		before, after int
	}{
		{"110026 deliveries (100000 acked, 0 conflicts, 10026 not acked, 992 crashes (207 before the answer, 785 after)), 100000 effect rows in payments", 207, 785},
		{"60 deliveries (60 acked, 0 conflicts, 0 not acked, 5 crashes after the answer), 60 effect rows in payments", 0, 5},
		{"60 deliveries (59 acked, 0 conflicts, 1 not acked, 1 crash before the answer), 60 effect rows in payments", 1, 0},
		{"60 deliveries (60 acked, 0 conflicts, 0 not acked, 0 crashes), 60 effect rows in payments", 0, 0},
	} {
		if b, a := crashFigures(c.line); b != c.before || a != c.after {
			t.Errorf("crashFigures(%q) = %d, %d; want %d, %d", c.line, b, a, c.before, c.after)
		}
	}
}
