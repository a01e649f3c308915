package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

// readAll reads every event, collecting bad records instead of stopping.
func readAll(t *testing.T, name string, r io.Reader, opts Options) (Format, []Event, []*BadRecordError, error) {
	t.Helper()
	rd, err := Open(name, r, opts)
	if err != nil {
		return "", nil, nil, err
	}
	defer rd.Close()
	var evs []Event
	var bad []*BadRecordError
	for {
		ev, err := rd.Next()
		if err == io.EOF {
			return rd.Format(), evs, bad, nil
		}
		var be *BadRecordError
		if errors.As(err, &be) {
			bad = append(bad, be)
			if be.Fatal {
				return rd.Format(), evs, bad, nil
			}
			continue
		}
		if err != nil {
			return rd.Format(), evs, bad, err
		}
		evs = append(evs, ev)
	}
}

type want struct {
	id, key, data string
	line          int
	redelivered   bool
}

func TestSamples(t *testing.T) {
	tests := []struct {
		file   string
		opts   Options
		format Format
		want   []want
	}{
		{"cloudevents.ndjson", Options{}, CloudEvents, []want{
			{"/orders/evt-1", "order-1", `{"orderId":"order-1","amount":10}`, 1, false},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":10}`, 2, false},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":10}`, 3, false},
			{"/orders/evt-3", "order-3", `{"orderId":"order-3","amount":10}`, 4, false},
			{"/orders/evt-4", "order-4", `{"orderId":"order-4","amount":10}`, 5, false},
			{"/orders/evt-4", "order-4", `{"orderId":"order-4","amount":99}`, 6, false},
			{"/orders/evt-5", "order-3", `{"orderId":"order-3","amount":10}`, 7, false},
			{"/orders/evt-6", "order-6", `{"orderId":"order-6","amount":10}`, 8, false},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":10}`, 9, false},
			{"/orders/evt-7", "order-7", `{"orderId":"order-7","amount":10}`, 10, false},
		}},
		{"cloudevents-batch.json", Options{}, CloudEvents, []want{
			{"/orders/b-1", "order-1", `{"orderId":"order-1","amount":10}`, 2, false},
			{"/orders/b-2", "order-2", `{"orderId":"order-2","amount":10}`, 15, false},
			{"/orders/b-3", "order-9", `{"orderId":"order-9","amount":5}`, 28, false},
		}},
		{"kcat.jsonl", Options{ID: "headers.ce_id"}, Kcat, []want{
			{"evt-1", "order-1", `{"orderId": "order-1", "amount": 10}`, 1, false},
			{"evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 2, false},
			{"evt-3", "order-3", `{"orderId": "order-3", "amount": 30}`, 3, false},
			{"evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 4, true},
			{"orders/0/43", "order-4", `{"orderId": "order-4", "amount": 40}`, 5, false},
		}},
		// Without --id, the CloudEvents Kafka binding names the event:
		// ce_id and ce_source, and a record without them its place.
		{"kcat.jsonl", Options{}, Kcat, []want{
			{"/orders/evt-1", "order-1", `{"orderId": "order-1", "amount": 10}`, 1, false},
			{"/orders/evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 2, false},
			{"evt-3", "order-3", `{"orderId": "order-3", "amount": 30}`, 3, false},
			{"/orders/evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 4, true},
			{"orders/0/43", "order-4", `{"orderId": "order-4", "amount": 40}`, 5, false},
		}},
		// Binary and structured records of one topic; the same event in
		// two partitions is one event published twice.
		{"kcat-cloudevents.jsonl", Options{}, Kcat, []want{
			{"/orders/evt-1", "order-1", `{"orderId":"order-1","amount":10}`, 1, false},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":20}`, 2, false},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":20}`, 3, true},
			{"/orders/evt-1", "order-1", `{"orderId":"order-1","amount":10}`, 4, false},
		}},
		{"sqs-receive.json", Options{}, SQS, []want{
			{"a1b2c3d4-0001-4f00-8000-000000000001", "order-1", `{"orderId": "order-1", "amount": 10}`, 3, false},
			{"a1b2c3d4-0002-4f00-8000-000000000002", "order-2", `{"orderId": "order-2", "amount": 20}`, 18, false},
			{"a1b2c3d4-0001-4f00-8000-000000000001", "order-1", `{"orderId": "order-1", "amount": 10}`, 33, true},
		}},
		{"lambda-sqs-sns.json", Options{Key: "data.orderId"}, SQS, []want{
			{"sns-1", "order-1", `{"orderId": "order-1", "amount": 10}`, 3, false},
			{"sns-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 19, false},
			{"sns-1", "order-1", `{"orderId": "order-1", "amount": 10}`, 35, true},
		}},
		{"nats.dump", Options{Key: "data.orderId"}, NATS, []want{
			{"evt-1", "order-1", `{"orderId": "order-1", "amount": 10}`, 1, false},
			{"evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 2, false},
			{"evt-2", "order-2", `{"orderId": "order-2", "amount": 20}`, 3, true},
			{"ORDERS/3", "order-3", `{"orderId": "order-3", "amount": 30}`, 4, false},
		}},
		{"nats-cloudevents.dump", Options{}, NATS, []want{
			{"/orders/evt-1", "order-1", `{"orderId":"order-1","amount":10}`, 1, false},
			{"/orders/evt-1", "order-1", `{"orderId":"order-1","amount":10}`, 2, true},
			{"/orders/evt-2", "order-2", `{"orderId":"order-2","amount":20}`, 3, false},
		}},
		{"plain.ndjson", Options{ID: "eventId", Key: "order.id"}, NDJSON, []want{
			{"p-1", "order-1", `{"eventId":"p-1","order":{"id":"order-1"},"amount":10}`, 1, false},
			{"p-2", "order-2", `{"eventId":"p-2","order":{"id":"order-2"},"amount":20}`, 2, false},
			{"p-1", "order-1", `{"eventId":"p-1","order":{"id":"order-1"},"amount":10}`, 3, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "capture", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, gz := range []bool{false, true} {
				in := src
				if gz {
					var b bytes.Buffer
					w := gzip.NewWriter(&b)
					w.Write(src)
					w.Close()
					in = b.Bytes()
				}
				format, evs, bad, err := readAll(t, tt.file, bytes.NewReader(in), tt.opts)
				if err != nil || len(bad) > 0 {
					t.Fatalf("gzip %v: err %v, bad %v", gz, err, bad)
				}
				if format != tt.format {
					t.Errorf("gzip %v: format %s, want %s", gz, format, tt.format)
				}
				if len(evs) != len(tt.want) {
					t.Fatalf("gzip %v: %d events, want %d", gz, len(evs), len(tt.want))
				}
				for i, w := range tt.want {
					ev := evs[i]
					data := compact(gjson.GetBytes(ev.Envelope, "data").Raw)
					w.data = compact(w.data)
					if ev.ID != w.id || ev.Key != w.key || ev.At.Line != w.line || ev.Redelivered != w.redelivered || data != w.data {
						t.Errorf("gzip %v: event %d = id %q key %q line %d redelivered %v data %s; want id %q key %q line %d redelivered %v data %s",
							gz, i+1, ev.ID, ev.Key, ev.At.Line, ev.Redelivered, data, w.id, w.key, w.line, w.redelivered, w.data)
					}
					if ev.At.File != tt.file {
						t.Errorf("event %d file %q, want %q", i+1, ev.At.File, tt.file)
					}
					if !gjson.ValidBytes(ev.Envelope) {
						t.Errorf("event %d envelope is not JSON: %s", i+1, ev.Envelope)
					}
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	long := `{"specversion":"1.0","id":"x","source":"/s","data":"` + strings.Repeat("a", 2<<20) + `"}`
	tests := []struct {
		name   string
		in     string
		opts   Options
		good   int
		line   int
		reason string
		fatal  bool
	}{
		{"malformed line", "{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\"}\n{\"specversion\": oops}\n{\"specversion\":\"1.0\",\"id\":\"b\",\"source\":\"/s\"}\n", Options{}, 2, 2, "not valid JSON", false},
		{"truncated last line", "{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\"}\n{\"specversion\":\"1.0\",\"id\":\"b\"", Options{}, 1, 2, "ends in the middle of a record", false},
		{"invalid UTF-8", "{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\"}\n{\"specversion\":\"1.0\",\"id\":\"\xff\"}\n", Options{}, 1, 2, "not valid UTF-8", false},
		{"line too long", "{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\"}\n" + long + "\n{\"specversion\":\"1.0\",\"id\":\"b\",\"source\":\"/s\"}\n", Options{}, 2, 2, "longer than the limit", false},
		{"missing id", "{\"specversion\":\"1.0\",\"source\":\"/s\",\"data\":{}}\n", Options{}, 0, 1, "has no id", false},
		{"bad base64", "{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\",\"data_base64\":\"!!!\"}\n", Options{}, 0, 1, "data_base64 does not decode", false},
		{"nats bad base64", "{\"Subject\":\"s\",\"Header\":{\"Nats-Msg-Id\":[\"a\"]},\"Data\":\"%%%\"}\x00", Options{}, 0, 1, "Data does not decode", false},
		{"nats no id", "{\"Subject\":\"s\",\"Header\":{},\"Data\":\"e30=\"}\x00", Options{}, 0, 1, "no Nats-Msg-Id", false},
		{"plain no id", "{\"x\":1}\n", Options{Format: NDJSON, ID: "eventId"}, 0, 1, "no event id at --id path eventId", false},
		{"truncated batch", "[\n{\"specversion\":\"1.0\",\"id\":\"a\",\"source\":\"/s\"},\n{\"specversion\":\"1.0\",", Options{}, 1, 3, "truncated", true},
		{"batch element too long", "[\n" + long + "\n]", Options{}, 0, 2, "longer than the limit", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, evs, bad, err := readAll(t, "in.log", strings.NewReader(tt.in), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != tt.good {
				t.Errorf("%d good events, want %d", len(evs), tt.good)
			}
			if len(bad) != 1 {
				t.Fatalf("%d bad records (%v), want 1", len(bad), bad)
			}
			b := bad[0]
			if b.At.File != "in.log" || b.At.Line != tt.line || !strings.Contains(b.Reason, tt.reason) || b.Fatal != tt.fatal {
				t.Errorf("bad record %v (fatal %v), want in.log:%d with %q (fatal %v)", b, b.Fatal, tt.line, tt.reason, tt.fatal)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name, in string
		opts     Options
		want     Format
		err      string
	}{
		{"cloudevents line", `{"specversion":"1.0","id":"a","source":"/s"}` + "\n", Options{}, CloudEvents, ""},
		{"kcat", `{"topic":"t","partition":0,"offset":1,"payload":"x"}` + "\n", Options{}, Kcat, ""},
		{"sqs one line", `{"Messages":[]}`, Options{}, SQS, ""},
		{"nats", `{"Subject":"s","Data":"e30="}` + "\x00", Options{}, NATS, ""},
		{"plain with --id", `{"eventId":"a"}` + "\n", Options{ID: "eventId"}, NDJSON, ""},
		{"plain without --id", `{"eventId":"a"}` + "\n", Options{}, "", "cannot tell the capture format"},
		{"not json", "hello\n", Options{}, "", "does not start with a JSON object"},
		{"forced", `{"eventId":"a"}` + "\n", Options{Format: NDJSON, ID: "eventId"}, NDJSON, ""},
		{"ndjson needs --id", `{"eventId":"a"}` + "\n", Options{Format: NDJSON}, "", "needs --id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := Open("in", strings.NewReader(tt.in), tt.opts)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rd.Format() != tt.want {
				t.Errorf("format %s, want %s", rd.Format(), tt.want)
			}
		})
	}
	if _, err := ParseFormat("avro"); err == nil || !strings.Contains(err.Error(), `unknown --input "avro"`) {
		t.Errorf("ParseFormat(avro) = %v", err)
	}
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

// TestBadSamples: each file under testdata/capture/bad is reported at the
// line that is wrong, with why.
func TestBadSamples(t *testing.T) {
	tests := []struct {
		file, reason string
		line         int
	}{
		{"truncated.ndjson", "ends in the middle of a record", 2},
		{"invalid-utf8.ndjson", "not valid UTF-8", 1},
		{"bad-base64.ndjson", "data_base64 does not decode", 1},
		{"missing-id.ndjson", "has no id", 1},
		{"bad.nats.dump", "Data does not decode as base64", 1},
		{"truncated-sqs.json", "truncated", 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "capture", "bad", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			_, _, bad, err := readAll(t, tt.file, bytes.NewReader(src), Options{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, b := range bad {
				found = found || (b.At.Line == tt.line && strings.Contains(b.Reason, tt.reason))
			}
			if !found {
				t.Fatalf("bad records %v, want %s:%d with %q", bad, tt.file, tt.line, tt.reason)
			}
		})
	}
}

// TestByteOrderMarkIsSkipped: a capture that starts with UTF-8's byte
// order mark, as Windows tools write it, plain or gzipped, reads as the
// same capture without it, to the line, whatever the read sizes.
func TestByteOrderMarkIsSkipped(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "capture", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue // a folder
		}
		name := filepath.Base(file)
		opts := Options{}
		if strings.HasPrefix(name, "plain") {
			opts.ID = "eventId"
		}
		if strings.HasSuffix(name, ".gz") {
			continue
		}
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(append([]byte("\ufeff"), data...))
		zw.Close()
		for _, c := range []struct {
			how string
			r   io.Reader
		}{
			{"whole", bytes.NewReader(append([]byte("\ufeff"), data...))},
			{"a byte at a time", iotest.OneByteReader(bytes.NewReader(append([]byte("\ufeff"), data...)))},
			{"gzipped", bytes.NewReader(gz.Bytes())},
		} {
			t.Run(name+"/"+c.how, func(t *testing.T) {
				wf, wevs, wbad, werr := readAll(t, name, bytes.NewReader(data), opts)
				f, evs, bad, err := readAll(t, name, c.r, opts)
				if fmt.Sprint(f, evs, bad, err) != fmt.Sprint(wf, wevs, wbad, werr) {
					t.Errorf("with a byte order mark:\n%v %v %v %v\nwithout:\n%v %v %v %v", f, evs, bad, err, wf, wevs, wbad, werr)
				}
			})
		}
	}
}
