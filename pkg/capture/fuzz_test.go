package capture

import (
	"bytes"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// fuzzReader feeds arbitrary input to one reader: it must never panic, and
// every event it returns must have an id, a line and a JSON envelope.
func fuzzReader(f *testing.F, format Format, opts Options, samples ...string) {
	for _, s := range samples {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "capture", s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	bad, err := filepath.Glob(filepath.Join("..", "..", "testdata", "capture", "bad", "*"))
	if err != nil || len(bad) == 0 {
		f.Fatalf("no bad-input seeds: %v", err)
	}
	for _, b := range bad {
		data, err := os.ReadFile(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(""))
	f.Add([]byte("{\"specversion\": oops}\n"))
	f.Add([]byte("[\n{\"id\":1},"))
	f.Add([]byte("{\"id\":\"\xff\"}\x00"))
	opts.Format = format
	opts.MaxRecord = 4 << 10
	f.Fuzz(func(t *testing.T, in []byte) {
		rd, err := Open("fuzz", strings.NewReader(string(in)), opts)
		if err != nil {
			return
		}
		defer rd.Close()
		for i := 0; i < 10000; i++ {
			ev, err := rd.Next()
			if err == io.EOF {
				return
			}
			var be *BadRecordError
			if errors.As(err, &be) {
				if be.At.File != "fuzz" || be.At.Line < 1 {
					t.Fatalf("bad record without a location: %v", be)
				}
				if be.Fatal {
					return
				}
				continue
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if ev.ID == "" || ev.At.Line < 1 || !gjson.ValidBytes(ev.Envelope) {
				t.Fatalf("event %+v: want an id, a line and a JSON envelope", ev)
			}
		}
	})
}

func FuzzCloudEvents(f *testing.F) {
	fuzzReader(f, CloudEvents, Options{}, "cloudevents.ndjson", "cloudevents-batch.json")
}

func FuzzKcat(f *testing.F) { fuzzReader(f, Kcat, Options{ID: "headers.ce_id"}, "kcat.jsonl") }

func FuzzSQS(f *testing.F) { fuzzReader(f, SQS, Options{}, "sqs-receive.json", "lambda-sqs-sns.json") }

func FuzzNATS(f *testing.F) { fuzzReader(f, NATS, Options{}, "nats.dump", "nats-cloudevents.dump") }

func FuzzNDJSON(f *testing.F) {
	fuzzReader(f, NDJSON, Options{ID: "eventId", Key: "order.id"}, "plain.ndjson")
}

func FuzzDetect(f *testing.F) {
	fuzzReader(f, Auto, Options{}, "cloudevents.ndjson", "kcat.jsonl", "sqs-receive.json", "nats.dump")
}

// FuzzTopLevel: the one pass cloudRecord reads a record's keys in finds
// what a lookup of each key (gjson.GetBytes) finds, whenever no key is
// named twice.
func FuzzTopLevel(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","source":"/s","subject":"k"}`,
		`{"i\u0064":"a","source":{"id":"nested"},"data":{"subject":"x"}}`,
		`{"data_base64":"eyJ4IjoxfQ==","partitionkey":7,"id":12}`,
		`{"id":null,"subject":["a"],"":1}`,
		`[{"id":"a"}]`, `"id"`, `{}`, `{"id":"a","id":"b"}`,
	} {
		f.Add([]byte(s))
	}
	names := []string{"id", "source", "data_base64", "partitionkey", "subject"}
	f.Fuzz(func(t *testing.T, rec []byte) {
		if !gjson.ValidBytes(rec) {
			return
		}
		var got [5]gjson.Result
		if _, dup := topLevel(rec, names, &got[0], &got[1], &got[2], &got[3], &got[4]); dup {
			return
		}
		for i, name := range names {
			want := gjson.GetBytes(rec, name)
			if got[i].Raw != want.Raw || got[i].Type != want.Type || got[i].Exists() != want.Exists() {
				t.Fatalf("%s in %q: one pass read %q (%v), a lookup %q (%v)", name, rec, got[i].Raw, got[i].Type, want.Raw, want.Type)
			}
		}
	})
}

// FuzzReadSizes: whatever the input and the format, a reader handed the
// input a byte at a time, in halves, with its last data beside io.EOF or
// in short reads at random places gives what it gives when it reads the
// input from memory: the same events and bad records, on the same lines.
func FuzzReadSizes(f *testing.F) {
	formats := []Options{
		{Format: Auto, ID: "eventId"}, {Format: CloudEvents}, {Format: Kcat}, {Format: SQS},
		{Format: NATS}, {Format: NDJSON, ID: "eventId", Key: "order.id"},
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "capture", "*"))
	bad, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "capture", "bad", "*"))
	for _, name := range append(files, bad...) {
		if data, err := os.ReadFile(name); err == nil {
			for i := range formats {
				f.Add(data, int64(i), uint8(i))
			}
		}
	}
	for gi, gf := range generators {
		g := &gen{rnd: rand.New(rand.NewSource(int64(gi))), s: shape{n: 5, sizes: "mixed", blanks: true, crlf: gi%2 == 0, pretty: gi%3 == 0}}
		c := gf.gen(g)
		for i, o := range formats {
			if o.Format == c.opts.Format {
				f.Add(g.buf.Bytes(), int64(gi), uint8(i))
			}
		}
	}
	f.Add([]byte(`{"Messages": [{"MessageId":"a","Body":"x"}]}`+"\n"+`{"Messages":"none"}`), int64(1), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, seed int64, format uint8) {
		opts := formats[int(format)%len(formats)]
		opts.MaxRecord = 4 << 10
		want := readWith("fuzz", bytes.NewReader(in), opts)
		for wi, w := range readWays[1:] {
			got := readWith("fuzz", w.wrap(bytes.NewReader(in), seed+int64(wi)), opts)
			if d := sameReading(got, want); d != "" {
				t.Fatalf("%s reads (seed %d) of %s: %s", w.name, seed+int64(wi), opts.Format, d)
			}
		}
	})
}
