// Command runnerbench times the scenario runner of two builds of redeliver
// on the same generated scenario files, alternating them run by run: a
// `times:` step of one event, and a concurrent step without interleave
// (explored under every schedule) after a check of `times:` deliveries. It
// prints each run, then the medians, the ratio and the peak memory, and
// fails if the two builds' reports differ. make bench-runner runs it; see
// docs/performance.md.
//
//	runnerbench -base OLD_BIN -redeliver NEW_BIN [-rounds 3] [-only NAME,...]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/bench"
)

// cases are the scenario files timed, by name.
// benchCase is a scenario the builds are timed on.
type benchCase struct{ name, src string }

var cases = []benchCase{
	{"times-20000", timesFile(20000)},
	{"times-100000", timesFile(100000)},
	{"explore-after-5000", exploreFile(5000)},
	{"explore-after-20000", exploreFile(20000)},
}

func timesFile(n int) string {
	return fmt.Sprintf(`version: 1
name: one event delivered %[1]d times
handler: {strategy: event-id, effect: shipments}
checks:
  - name: many
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: %[1]d
    expect:
      rows: {shipments: 1}
`, n)
}

func exploreFile(n int) string {
	return fmt.Sprintf(`version: 1
name: an unforced race after %[1]d deliveries
handler: {strategy: event-id, effect: shipments}
checks:
  - name: prefix
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        times: %[1]d
  - name: race
    steps:
      - deliver: {id: evt-2, data: {orderId: order-2}}
        concurrent: 2
    expect:
      rows: {shipments: 2}
`, n)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runnerbench:", err)
		os.Exit(2)
	}
}

type result struct {
	secs float64
	kib  int64
	out  string
}

func run(args []string) error {
	fs := flag.NewFlagSet("runnerbench", flag.ContinueOnError)
	base := fs.String("base", "", "the baseline build of redeliver")
	bin := fs.String("redeliver", "bin/redeliver", "the build of redeliver to time")
	rounds := fs.Int("rounds", 3, "alternating rounds per scenario")
	only := fs.String("only", "", "comma-separated scenario names (default all: "+names()+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" {
		return fmt.Errorf("-base names the baseline build (make bench-runner BASE=FILE); build it from another commit: git worktree add DIR COMMIT && (cd DIR && go build -o FILE .)")
	}
	dir, err := os.MkdirTemp("", "runnerbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var rows []row
	for _, c := range cases {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), c.name) {
			continue
		}
		r, err := timeCase(ctx, dir, c, *bin, *base, *rounds)
		if err != nil {
			return err
		}
		rows = append(rows, r)
	}
	fmt.Printf("\nmedian of %d alternating rounds, whole process; speed = base time ÷ new time; the reports are identical\n", *rounds)
	fmt.Printf("%-20s %9s %9s %7s %9s %9s\n", "scenario", "new s", "base s", "speed", "new MB", "base MB")
	for _, r := range rows {
		ns, os_ := median(r.new, func(x result) float64 { return x.secs }), median(r.old, func(x result) float64 { return x.secs })
		nk, ok := median(r.new, func(x result) float64 { return float64(x.kib) }), median(r.old, func(x result) float64 { return float64(x.kib) })
		fmt.Printf("%-20s %9.2f %9.2f %6.2fx %9.0f %9.0f\n", r.name, ns, os_, os_/ns, nk/1024, ok/1024)
	}
	return nil
}

// row is one scenario's times, of the build timed and of the baseline.
type row struct {
	name     string
	new, old []result
}

// timeCase writes the scenario c into dir and runs it with the two
// builds in turn, rounds times, printing each time; the two builds'
// reports must be the same.
func timeCase(ctx context.Context, dir string, c benchCase, bin, base string, rounds int) (row, error) {
	file := filepath.Join(dir, c.name+".yaml")
	if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
		return row{}, err
	}
	r := row{name: c.name}
	for round := 1; round <= rounds; round++ {
		for _, who := range []string{"new", "base"} {
			b := bin
			if who == "base" {
				b = base
			}
			res, err := time1(ctx, b, file)
			if err != nil {
				return row{}, err
			}
			fmt.Printf("%-20s round %d %-4s %7.2f s %6d MB\n", c.name, round, who, res.secs, res.kib/1024)
			if who == "new" {
				r.new = append(r.new, res)
			} else {
				r.old = append(r.old, res)
			}
		}
	}
	if r.new[0].out != r.old[0].out {
		return row{}, fmt.Errorf("%s: the two builds' reports differ:\n--- base\n%s--- new\n%s", c.name, r.old[0].out, r.new[0].out)
	}
	return r, nil
}

func names() string {
	var s []string
	for _, c := range cases {
		s = append(s, c.name)
	}
	return strings.Join(s, ",")
}

// time1 runs `BIN run FILE` once: wall time, peak resident memory, and
// its report (which the two builds must agree on).
func time1(ctx context.Context, bin, file string) (result, error) {
	cmd := exec.CommandContext(ctx, bin, "run", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	res := result{secs: time.Since(start).Seconds(), out: out.String()}
	if err != nil {
		return res, fmt.Errorf("%s run %s: %w\n%s", bin, file, err, out.String())
	}
	res.kib = bench.MaxRSSKiB(cmd.ProcessState)
	return res, nil
}

func median(rs []result, f func(result) float64) float64 {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
