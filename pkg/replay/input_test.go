package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/problem"
)

// TestOpenCapture: both replays open a capture alike, and one that
// cannot be read is one sentence at its file or line, of the kind that
// exits 2.
func TestOpenCapture(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ok := write("ok.ndjson", `{"specversion":"1.0","id":"a","source":"s","type":"t"}`+"\n")
	gz := write("bad.gz", "\x1f\x8bnot gzip at all")
	text := write("notes.txt", "hello\n")
	for _, tt := range []struct {
		name  string
		in    string
		stdin string
		want  Input  // when it opens
		err   string // else the error's sentence (its start)
		kind  problem.Kind
	}{
		{"a file", ok, "", Input{File: ok, Format: "cloudevents"}, "", ""},
		{"stdin", "-", `{"specversion":"1.0","id":"a","source":"s","type":"t"}` + "\n", Input{File: "stdin", Format: "cloudevents"}, "", ""},
		{"no such file", filepath.Join(dir, "missing.ndjson"), "", Input{}, "cannot read the capture " + filepath.Join(dir, "missing.ndjson") + ": no such file or directory", problem.Usage},
		{"an unknown format", text, "", Input{}, text + ": ", problem.InvalidInput},
		{"a damaged gzip header", gz, "", Input{}, gz + ":1: the gzip header is damaged (gzip: invalid header)", problem.InvalidInput},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := OpenCapture(context.Background(), tt.in, strings.NewReader(tt.stdin), capture.Options{}, nil)
			if tt.err != "" {
				var pe *problem.Error
				if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tt.err) || pe.Kind != tt.kind {
					t.Fatalf("error %v, want %s: %s", err, tt.kind, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if src.Input != tt.want {
				t.Errorf("input %+v, want %+v", src.Input, tt.want)
			}
			if ev, err := src.Next(); err != nil || ev.ID != "s/a" {
				t.Errorf("first event %q, %v; want s/a", ev.ID, err)
			}
			if err := src.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if err := src.Close(); err != nil {
				t.Errorf("close again: %v", err)
			}
		})
	}
}

// TestMaxBad: --max-bad skips up to its limit, each named, and stops at
// the one past it, or at one after which the file cannot be read.
func TestMaxBad(t *testing.T) {
	bad := func(line int, fatal bool) *capture.BadRecordError {
		return &capture.BadRecordError{At: consumer.Location{File: "c.ndjson", Line: line}, Reason: "record is not valid JSON", Fatal: fatal}
	}
	for _, tt := range []struct {
		name    string
		limit   int
		records []*capture.BadRecordError
		err     string // the error of the last record, or empty
		warned  string
	}{
		{"none allowed", 0, []*capture.BadRecordError{bad(2, false)}, "c.ndjson:2: record is not valid JSON (--max-bad 1 allows that many bad records to be skipped)", ""},
		{"within the limit", 2, []*capture.BadRecordError{bad(2, false), bad(5, false)}, "", "redeliver: skipped c.ndjson:2: record is not valid JSON\nredeliver: skipped c.ndjson:5: record is not valid JSON\n"},
		{"past the limit", 1, []*capture.BadRecordError{bad(2, false), bad(5, false)}, "c.ndjson:5: record is not valid JSON (--max-bad 2 allows that many bad records to be skipped)", "redeliver: skipped c.ndjson:2: record is not valid JSON\n"},
		{"the rest unreadable", 9, []*capture.BadRecordError{bad(3, true)}, "c.ndjson:3: record is not valid JSON (the rest of the file cannot be read)", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var warn strings.Builder
			m := MaxBad{Limit: tt.limit, Warn: &warn}
			var err error
			for i, be := range tt.records {
				err = m.Skip(be)
				if err != nil && i < len(tt.records)-1 {
					t.Fatalf("record %d stopped the replay: %v", i+1, err)
				}
			}
			got := ""
			if err != nil {
				got = err.Error()
				if problem.KindOf(err) != problem.InvalidInput {
					t.Errorf("%v is not invalid input", err)
				}
			}
			if got != tt.err {
				t.Errorf("error %q, want %q", got, tt.err)
			}
			if warn.String() != tt.warned {
				t.Errorf("warned:\n%s\nwant:\n%s", warn.String(), tt.warned)
			}
			if m.Count() != len(tt.records) {
				t.Errorf("count %d, want %d", m.Count(), len(tt.records))
			}
		})
	}
}
