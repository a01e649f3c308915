package main

import (
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	kills  = flag.Int("kills", 3, "kill -9 points of TestResumeAfterKill9 (each kills a real replay once)")
	events = flag.Int("resume-events", 1000, "events in TestResumeAfterKill9's capture")
)

// injection is every injection flag of replay at once.
var injection = []string{"--redeliver", "0.2", "--crash", "0.1", "--rewind", "20", "--republish", "0.05", "--batch", "50"}

// TestResumeAfterKill9 kills a real replay process with SIGKILL at
// different points, replays again onto the same file, and compares the
// database row for row with one uninterrupted replay: every injected
// decision must come out the same, so nothing is lost and nothing doubled.
// A replay onto the finished database adds nothing either.
//
// The kill points are drawn between 16 KiB of write-ahead log and six
// tenths of the most the uninterrupted replay's log held, so every kill
// lands inside a running replay (a replay that ends before its kill is
// run again with a point drawn anew, and the test fails when three do);
// the
// capture's size then only decides how long each replay runs: 1,000
// events make 20 batches with every injection firing many times.
// -kills N and -resume-events N run more (the former defaults were 3 kill
// points of a 6,000-event capture).
func TestResumeAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	t.Parallel()
	bin, err := exec.LookPath("redeliver")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	capture := filepath.Join(dir, "capture.ndjson")
	writeCapture(t, capture, *events)
	replay := func(db string) *exec.Cmd {
		args := append([]string{"replay", "--db", db}, injection...)
		c := exec.Command(bin, append(args, capture)...)
		c.Dir = dir
		return c
	}
	// runUntil runs a replay onto db, polling its write-ahead log every
	// millisecond: it kills the process with SIGKILL once the log reaches
	// killAt bytes (never, for 0), and returns the largest size it saw and
	// whether it killed.
	runUntil := func(db string, killAt int64) (walMax int64, killed bool, out []byte) {
		c := replay(db)
		var buf strings.Builder
		c.Stdout, c.Stderr = &buf, &buf
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("replay onto %s: %v\n%s", filepath.Base(db), err, buf.String())
				}
				return walMax, false, []byte(buf.String())
			case <-time.After(time.Millisecond):
				if st, err := os.Stat(db + "-wal"); err == nil {
					walMax = max(walMax, st.Size())
					if killAt > 0 && walMax >= killAt {
						c.Process.Signal(syscall.SIGKILL)
						<-done
						return walMax, true, nil
					}
				}
			}
		}
	}
	clean := filepath.Join(dir, "clean.db")
	walMax, _, _ := runUntil(clean, 0)
	want := dump(t, clean)
	if len(want) < *events {
		t.Fatalf("the clean replay wrote %d rows, want at least one per event", len(want))
	}
	const walMin = 16 << 10
	if walMax < 2*walMin {
		t.Fatalf("the clean replay's write-ahead log grew to %d bytes; want room for kill points past %d", walMax, walMin)
	}

	// Onto the finished database: nothing new.
	if out, err := replay(clean).CombinedOutput(); err != nil || !strings.Contains(string(out), "this replay added none") {
		t.Fatalf("replay onto the finished database: %v\n%s", err, out)
	}
	compare(t, "replayed onto the finished database", dump(t, clean), want)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for k := 0; k < *kills; k++ {
		db := filepath.Join(dir, fmt.Sprintf("killed-%d.db", k))
		// Kill once the write-ahead log has grown past a point drawn at
		// random within the first six tenths of what the uninterrupted
		// replay wrote: its last stretch is written in the replay's final
		// milliseconds, and at once the replay ends and its checkpoint
		// deletes the log, so a poll every millisecond on a loaded
		// machine may never see it (a kill point at nine tenths once
		// found the replay ended).
		//
		// How large the log grows is not the same in every run: a
		// checkpoint that waits for a reader lets it grow on, and on a
		// loaded machine the clean replay's log once grew past what a
		// later one reached, or a poll starved of the CPU saw too little
		// of it. A replay that ended before its kill point is run again,
		// onto a new file, with a point drawn within what that replay's
		// log was seen to reach (when there is room past walMin); three
		// that all end is a failure.
		var at int64
		killed, top := false, walMax
		for try := 0; try < 3 && !killed; try++ {
			if try > 0 {
				db = filepath.Join(dir, fmt.Sprintf("killed-%d-%d.db", k, try))
			}
			at = walMin + rng.Int64N(top*6/10-walMin)
			var reached int64
			reached, killed, _ = runUntil(db, at)
			if !killed {
				t.Logf("kill point %d: the replay ended before its write-ahead log reached %d bytes (it reached %d); drawn again", k, at, reached)
				if reached*6/10 > walMin {
					top = reached
				}
			}
		}
		if !killed {
			t.Fatalf("kill point %d: three replays ended before their write-ahead logs reached the kill point drawn", k)
		}
		t.Logf("kill point %d: killed at %d bytes of WAL", k, at)
		if out, err := replay(db).CombinedOutput(); err != nil {
			t.Fatalf("resume %d: %v\n%s", k, err, out)
		}
		compare(t, fmt.Sprintf("killed at %d bytes of WAL and resumed", at), dump(t, db), want)
	}
}

// writeCapture writes n CloudEvents, one in nine an id repeated.
func writeCapture(t *testing.T, path string, n int) {
	var b strings.Builder
	for i := 0; i < n; i++ {
		id := i
		if i%9 == 8 {
			id = i / 2
		}
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order.placed","data":{"orderId":"order-%d","amount":%d}}`+"\n", id, id, id%100)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dump reads the effects and markers of a replay database, in key order,
// without the row ids and rowids that record when a row was written.
func dump(t *testing.T, path string) []string {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	for _, q := range []string{
		`SELECT 'effect', event_id, consumer, COALESCE(business_key, ''), payload FROM effects ORDER BY event_id, consumer, payload`,
		`SELECT 'marker', event_id, consumer, COALESCE(business_key, ''), identity FROM processed ORDER BY event_id, consumer`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c [5]string
			if err := rows.Scan(&c[0], &c[1], &c[2], &c[3], &c[4]); err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.Join(c[:], "\t"))
		}
		rows.Close()
	}
	return out
}

func compare(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d rows, the uninterrupted replay has %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: row %d is\n  %s\nthe uninterrupted replay has\n  %s", what, i, got[i], want[i])
			return
		}
	}
}
