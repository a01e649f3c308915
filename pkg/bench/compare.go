package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Mode is where a replay keeps its database.
type Mode string

// The modes compared.
const (
	Memory Mode = "memory" // redeliver's default (nothing kept), the peer's :memory:
	File   Mode = "file"   // a WAL file
)

// Compare says what to replay and with what.
type Compare struct {
	Redeliver string // the redeliver binary
	Peer      string // the folder of peer.js, with its node_modules
	Node      string // the node binary; "node" when empty
	Dir       string // where the captures and database files go
	Lines     int
	Rounds    int
	IDs       []IDs
	Modes     []Mode
	Out       io.Writer // one line per run, then the table
}

// Run is one measured process.
type Run struct {
	IDs     IDs
	Mode    Mode
	Who     string // "redeliver" or "peer"
	Seconds float64
	RSSKiB  int64
	CPU     float64 // user + system seconds of the process
}

// Result is the medians of one capture and mode.
type Result struct {
	IDs                         IDs
	Mode                        Mode
	Redeliver, Peer             float64 // median seconds
	RedeliverRSSKiB, PeerRSSKiB int64   // median peak RSS
	RedeliverCPU, PeerCPU       float64 // median CPU seconds (user + system)
}

// Speed is how many times faster redeliver was than the peer.
func (r Result) Speed() float64 { return r.Peer / r.Redeliver }

// CPURatio is redeliver's CPU time over the peer's for the same capture:
// CPU per line, against the peer's.
func (r Result) CPURatio() float64 { return r.RedeliverCPU / r.PeerCPU }

// ErrNoPeer says the peer is not where Compare.Peer points.
var ErrNoPeer = errors.New("the Node.js peer is not installed there")

// CheckPeer reports whether dir holds an installed peer: its script, and
// better-sqlite3 with its native module built (npm 11 installs a package
// without running its build script until the script is approved).
func CheckPeer(dir string) error {
	for _, p := range []string{"peer.js", filepath.Join("node_modules", "better-sqlite3")} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("%s: no %s: %w", dir, p, ErrNoPeer)
		}
	}
	native := filepath.Join("node_modules", "better-sqlite3", "build", "Release", "better_sqlite3.node")
	if _, err := os.Stat(filepath.Join(dir, native)); err != nil {
		return fmt.Errorf("%s: better-sqlite3 is there but its native module was not built (no %s; with npm 11, run npm install-scripts approve better-sqlite3 && npm rebuild better-sqlite3 there): %w", dir, native, ErrNoPeer)
	}
	return nil
}

// Do writes the captures, replays each with redeliver and with the peer,
// alternating, Rounds times, and returns the medians.
func (c Compare) Do(ctx context.Context) ([]Result, error) {
	if err := CheckPeer(c.Peer); err != nil {
		return nil, err
	}
	var runs []Run
	for _, ids := range c.IDs {
		capture := filepath.Join(c.Dir, fmt.Sprintf("%s-%d.ndjson", ids, c.Lines))
		if err := writeFile(capture, c.Lines, ids); err != nil {
			return nil, err
		}
		for round := 1; round <= c.Rounds; round++ {
			for _, mode := range c.Modes {
				for _, who := range []string{"redeliver", "peer"} {
					r, err := c.run(ctx, capture, ids, mode, who)
					if err != nil {
						return nil, err
					}
					fmt.Fprintf(c.Out, "round %d  %-10s %-6s %-9s %8.2f s %8.2f s CPU %8.1f MB\n", round, ids, mode, who, r.Seconds, r.CPU, float64(r.RSSKiB)/1024)
					runs = append(runs, r)
				}
			}
		}
	}
	return Medians(runs), nil
}

func writeFile(path string, n int, ids IDs) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteCapture(f, n, 1, ids)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// run replays capture once and measures the whole process: wall time, CPU
// time and peak resident memory.
func (c Compare) run(ctx context.Context, capture string, ids IDs, mode Mode, who string) (Run, error) {
	db := filepath.Join(c.Dir, who+".db")
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(db + s)
	}
	var cmd *exec.Cmd
	if who == "redeliver" {
		args := []string{"replay", "--identity", "data.orderId", capture}
		if mode == File {
			args = append(args, "--db", db)
		}
		cmd = exec.CommandContext(ctx, c.Redeliver, args...)
	} else {
		node := c.Node
		if node == "" {
			node = "node"
		}
		args := []string{filepath.Join(c.Peer, "peer.js"), "--prepared", capture}
		if mode == File {
			args = append(args, db)
		}
		cmd = exec.CommandContext(ctx, node, args...)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return Run{}, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	ps := cmd.ProcessState
	r := Run{IDs: ids, Mode: mode, Who: who, Seconds: secs, RSSKiB: MaxRSSKiB(ps), CPU: (ps.UserTime() + ps.SystemTime()).Seconds()}
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(db + s)
	}
	return r, nil
}

// Medians groups runs by capture and mode and takes the median of each
// side's time, CPU time and peak memory.
func Medians(runs []Run) []Result {
	var out []Result
	for _, r := range runs {
		if !slices.ContainsFunc(out, func(x Result) bool { return x.IDs == r.IDs && x.Mode == r.Mode }) {
			out = append(out, Result{IDs: r.IDs, Mode: r.Mode})
		}
	}
	for i := range out {
		var secs [2][]float64
		var rss [2][]int64
		var cpu [2][]float64
		for _, r := range runs {
			if r.IDs != out[i].IDs || r.Mode != out[i].Mode {
				continue
			}
			k := 0
			if r.Who == "peer" {
				k = 1
			}
			secs[k] = append(secs[k], r.Seconds)
			rss[k] = append(rss[k], r.RSSKiB)
			cpu[k] = append(cpu[k], r.CPU)
		}
		out[i].Redeliver, out[i].Peer = median(secs[0]), median(secs[1])
		out[i].RedeliverRSSKiB, out[i].PeerRSSKiB = median(rss[0]), median(rss[1])
		out[i].RedeliverCPU, out[i].PeerCPU = median(cpu[0]), median(cpu[1])
	}
	return out
}

func median[T int64 | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// WriteTable prints the medians and the ratios, one row per capture and mode.
func WriteTable(w io.Writer, lines, rounds int, results []Result) {
	fmt.Fprintf(w, "\n%d lines, median of %d alternating rounds; speed = peer time ÷ redeliver time; CPU = redeliver's CPU time ÷ the peer's\n", lines, rounds)
	fmt.Fprintf(w, "%-10s %-6s %11s %9s %7s %15s %10s %7s %14s %9s\n", "ids", "db", "redeliver s", "peer s", "speed",
		"redeliver CPU s", "peer CPU s", "CPU", "redeliver MB", "peer MB")
	for _, r := range results {
		fmt.Fprintf(w, "%-10s %-6s %11.2f %9.2f %6.2fx %15.2f %10.2f %6.2fx %14.1f %9.1f\n", r.IDs, r.Mode, r.Redeliver, r.Peer, r.Speed(),
			r.RedeliverCPU, r.PeerCPU, r.CPURatio(), float64(r.RedeliverRSSKiB)/1024, float64(r.PeerRSSKiB)/1024)
	}
}
