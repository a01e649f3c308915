package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redeliver/redeliver/pkg/bench"
	"github.com/redeliver/redeliver/pkg/handler"
)

// writeCapture writes the benchmark capture's shape with sequential ids.
func writeCapture(w io.Writer, n int, seed uint64) error {
	return bench.WriteCapture(w, n, seed, bench.Sequential)
}

// benchIDs is the id shape of the capture: UUIDs, or REDELIVER_BENCH_IDS.
func benchIDs(b *testing.B) bench.IDs {
	ids, err := bench.ParseIDs(os.Getenv("REDELIVER_BENCH_IDS"))
	if os.Getenv("REDELIVER_BENCH_IDS") == "" {
		ids, err = bench.UUID, nil
	}
	if err != nil {
		b.Fatalf("REDELIVER_BENCH_IDS: %v", err)
	}
	return ids
}

// benchN is the capture size: 1,000,000 lines, or REDELIVER_BENCH_N.
func benchN(b *testing.B) int {
	if s := os.Getenv("REDELIVER_BENCH_N"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("REDELIVER_BENCH_N=%q is not a positive number", s)
		}
		return n
	}
	return 1_000_000
}

func benchCapture(b *testing.B) (string, int) {
	n := benchN(b)
	path := filepath.Join(b.TempDir(), "capture.ndjson")
	if keep := os.Getenv("REDELIVER_BENCH_KEEP"); keep != "" {
		path = keep // kept for replaying the same file with other tools
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := bench.WriteCapture(f, n, 1, benchIDs(b)); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path, n
}

func benchReplay(b *testing.B, file bool) {
	path, n := benchCapture(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db := ":memory:"
		if file {
			db = filepath.Join(b.TempDir(), fmt.Sprintf("replay-%d.db", i))
		}
		rep, err := runSQLite(context.Background(), Options{
			Inputs:   []string{path},
			DB:       db,
			Handler:  handler.Config{Strategy: handler.EventID, Identity: []string{"data.orderId"}},
			Batch:    benchBatch(b),
			Parallel: benchParallel(b),
			Seed:     1,
		})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Counters.Deliveries != n || !rep.Passed() {
			b.Fatalf("replayed %d of %d deliveries, verdict %s", rep.Counters.Deliveries, n, rep.Verdict)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkReplayMemory replays the capture into SQLite in memory.
func BenchmarkReplayMemory(b *testing.B) { benchReplay(b, false) }

// BenchmarkReplayFile replays the capture into a SQLite file (WAL).
func BenchmarkReplayFile(b *testing.B) { benchReplay(b, true) }

// benchParallel is --parallel: the default, or REDELIVER_BENCH_PARALLEL.
func benchParallel(b *testing.B) int { return benchFlag(b, "REDELIVER_BENCH_PARALLEL") }

// benchBatch is --batch: the default, or REDELIVER_BENCH_BATCH.
func benchBatch(b *testing.B) int { return benchFlag(b, "REDELIVER_BENCH_BATCH") }

// benchFlag is the positive number in the environment variable env, or 0
// (the flag's default) when it is not set.
func benchFlag(b *testing.B, env string) int {
	s := os.Getenv(env)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q is not a positive number", env, s)
	}
	return n
}
