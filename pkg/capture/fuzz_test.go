package capture

import (
	"errors"
	"io"
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
