package replay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

// writeCapture writes n CloudEvents NDJSON lines of which about a fifth are
// redeliveries of a recent event (same id, same payload): the shape of the
// benchmark capture, and of the file the Node.js peer replays.
func writeCapture(w io.Writer, n int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	next := 0
	var line []byte
	for i := 0; i < n; i++ {
		id := next
		if next > 0 && rng.Float64() < 0.2 {
			id = next - 1 - rng.IntN(min(next, 1000))
		} else {
			next++
		}
		line = append(line[:0], `{"specversion":"1.0","id":"evt-`...)
		line = strconv.AppendInt(line, int64(id), 10)
		line = append(line, `","source":"/orders","type":"order.created","time":"2026-11-01T10:00:00Z","data":{"orderId":"order-`...)
		line = strconv.AppendInt(line, int64(id), 10)
		line = append(line, "\"}}\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
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
	if err := writeCapture(f, n, 1); err != nil {
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
			Inputs:  []string{path},
			DB:      db,
			Handler: handler.Config{Strategy: handler.EventID, Identity: []string{"data.orderId"}},
			Seed:    1,
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
