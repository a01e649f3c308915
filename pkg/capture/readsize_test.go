package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/tidwall/gjson"
)

var captureSeed = flag.Int64("capture.seed", 0, "seed of the generated captures and of the short reads (0: a new one each run)")

// readWay is one way a capture's bytes can arrive: whole, or as
// testing/iotest and shortReader hand them over.
type readWay struct {
	name string
	wrap func(r io.Reader, seed int64) io.Reader
}

var readWays = []readWay{
	{"whole", func(r io.Reader, _ int64) io.Reader { return r }},
	{"one-byte", func(r io.Reader, _ int64) io.Reader { return iotest.OneByteReader(r) }},
	{"half", func(r io.Reader, _ int64) io.Reader { return iotest.HalfReader(r) }},
	{"data-err", func(r io.Reader, _ int64) io.Reader { return iotest.DataErrReader(r) }},
	{"short", func(r io.Reader, seed int64) io.Reader {
		return &shortReader{r: r, rnd: rand.New(rand.NewSource(seed))}
	}},
}

// shortReader ends its reads at random places: a few bytes, a few hundred
// or tens of thousands, drawn afresh for every read.
type shortReader struct {
	r   io.Reader
	rnd *rand.Rand
}

func (s *shortReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		scale := []int{3, 600, 70000}[s.rnd.Intn(3)]
		p = p[:1+s.rnd.Intn(min(len(p), scale))]
	}
	return s.r.Read(p)
}

// badAt is a bad record as a reading gives it.
type badAt struct {
	Line   int
	Fatal  bool
	Reason string
}

// reading is what a reader made of a capture: its events and its bad
// records, in order, and the error that ended it, if not the end.
type reading struct {
	events []Event
	bad    []badAt
	err    error
}

// readWith reads a capture whole through the reader the package gives.
func readWith(name string, r io.Reader, opts Options) reading {
	var out reading
	rd, err := Open(name, r, opts)
	if err != nil {
		out.err = err
		return out
	}
	defer rd.Close()
	for i := 0; ; i++ {
		ev, err := rd.Next()
		if err == io.EOF {
			return out
		}
		var be *BadRecordError
		if errors.As(err, &be) {
			out.bad = append(out.bad, badAt{be.At.Line, be.Fatal, be.Reason})
			if be.Fatal {
				return out
			}
			continue
		}
		if err != nil {
			out.err = err
			return out
		}
		out.events = append(out.events, ev)
	}
}

// sameReading says how got differs from want, or "" when it does not.
func sameReading(got, want reading) string {
	if fmt.Sprint(got.err) != fmt.Sprint(want.err) {
		return fmt.Sprintf("error %v, want %v", got.err, want.err)
	}
	for i := 0; i < max(len(got.events), len(want.events)); i++ {
		if i >= len(got.events) || i >= len(want.events) {
			return fmt.Sprintf("%d events, want %d (the first one missing or extra is #%d: got %s, want %s)", len(got.events), len(want.events), i+1, eventAt(got.events, i), eventAt(want.events, i))
		}
		if !reflect.DeepEqual(got.events[i], want.events[i]) {
			return fmt.Sprintf("event #%d: got %s\n%+v\nwant %s\n%+v", i+1, eventAt(got.events, i), got.events[i], eventAt(want.events, i), want.events[i])
		}
	}
	if !reflect.DeepEqual(got.bad, want.bad) {
		return fmt.Sprintf("bad records %+v, want %+v", got.bad, want.bad)
	}
	return ""
}

func eventAt(evs []Event, i int) string {
	if i >= len(evs) {
		return "none"
	}
	return fmt.Sprintf("%s at line %d", evs[i].ID, evs[i].At.Line)
}

// The reference reading: the whole capture in memory, cut into records
// by the plainest means there are (bytes.Split for lines, encoding/json
// and gjson over whole documents), each record then read by the
// format's own record parser. It knows nothing of buffers or reads.

// referenceLines reads a capture of records separated by delim; with
// byRecord a record's place is its number, else the line it is on.
func referenceLines(name string, data []byte, delim byte, byRecord bool, parse recordParser) reading {
	var out reading
	n := 0
	for i, rec := range bytes.Split(data, []byte{delim}) {
		rec = bytes.TrimSpace(rec)
		if len(rec) == 0 {
			continue
		}
		n++
		at := consumer.Location{File: name, Line: i + 1}
		if byRecord {
			at.Line = n
		}
		out.add(rec, at, parse)
	}
	return out
}

// referenceDocs reads a capture of JSON documents: each top-level value
// is a record, or an array of records, or with sqs an object whose
// "Messages" or "Records" array holds them.
func referenceDocs(name string, data []byte, sqs bool, parse recordParser) reading {
	var out reading
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var doc json.RawMessage
		if err := dec.Decode(&doc); err == io.EOF {
			return out
		} else if err != nil {
			out.err = err
			return out
		}
		start := int(dec.InputOffset()) - len(doc)
		each := func(arr gjson.Result) {
			arr.ForEach(func(_, el gjson.Result) bool {
				off := start + el.Index
				out.add([]byte(el.Raw), consumer.Location{File: name, Line: 1 + bytes.Count(data[:off], []byte{'\n'})}, parse)
				return true
			})
		}
		v := gjson.ParseBytes(doc)
		switch {
		case v.IsArray():
			each(v)
		case sqs:
			v.ForEach(func(k, val gjson.Result) bool {
				if (k.Str == "Messages" || k.Str == "Records") && val.IsArray() {
					each(val)
				}
				return true
			})
		default:
			out.add(doc, consumer.Location{File: name, Line: 1 + bytes.Count(data[:start], []byte{'\n'})}, parse)
		}
	}
}

func (out *reading) add(rec []byte, at consumer.Location, parse recordParser) {
	bad := func(why string) { out.bad = append(out.bad, badAt{at.Line, false, why}) }
	switch {
	case !utf8.Valid(rec):
		bad("record is not valid UTF-8")
	case !json.Valid(rec):
		bad("record is not valid JSON")
	case rec[0] != '{':
		bad("record is not a JSON object")
	default:
		ev, why := parse(rec, at)
		if why != "" {
			bad(why)
			return
		}
		ev.At = at
		out.events = append(out.events, ev)
	}
}

// A generated capture: its bytes, how to read it, and the events it was
// written to hold (id and line), which the reference reading must find.
type generated struct {
	data  []byte
	opts  Options
	doc   bool // JSON documents rather than lines
	truth []placed
}

type placed struct {
	id   string
	line int
}

// shape is how a generated capture looks.
type shape struct {
	n      int
	sizes  string // "small", "mixed" or "large" (some records past the readers' 64 KiB buffers)
	crlf   bool
	blanks bool // blank lines and blanks before records
	pretty bool // multi-line, indented records and documents
	gzip   bool
}

func (s shape) String() string {
	return fmt.Sprintf("%d records, %s sizes, crlf %v, blanks %v, pretty %v, gzip %v", s.n, s.sizes, s.crlf, s.blanks, s.pretty, s.gzip)
}

var shapes = []shape{
	{n: 0, sizes: "small"},
	{n: 1, sizes: "small", blanks: true},
	{n: 2, sizes: "small", crlf: true},
	{n: 40, sizes: "small", blanks: true, pretty: true},
	{n: 30, sizes: "mixed", crlf: true, blanks: true},
	{n: 20, sizes: "mixed", pretty: true, gzip: true},
	{n: 3, sizes: "large", blanks: true},
}

// gen writes one generated capture.
type gen struct {
	rnd  *rand.Rand
	s    shape
	buf  bytes.Buffer
	want []placed
	// texts written so far; in a "large" shape the first is the large one
	large int
}

// line is the line the next byte written goes on.
func (g *gen) line() int { return 1 + bytes.Count(g.buf.Bytes(), []byte{'\n'}) }

func (g *gen) nl() {
	if g.s.crlf {
		g.buf.WriteString("\r\n")
	} else {
		g.buf.WriteByte('\n')
	}
}

// space writes, now and then, blank lines and blanks.
func (g *gen) space() {
	if !g.s.blanks || g.rnd.Intn(3) > 0 {
		return
	}
	for i := g.rnd.Intn(3); i > 0; i-- {
		g.buf.WriteString([]string{"", " ", "\t", "  "}[g.rnd.Intn(4)])
		g.nl()
	}
	g.buf.WriteString([]string{"", " ", "\t"}[g.rnd.Intn(3)])
}

func (g *gen) uuid() string {
	var b [16]byte
	g.rnd.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

var runes = []rune("abcdefghijklmnopqrstuvwxyz ABC0123456789\"\\/\n\t<>&éßøç中文字😀🚀\u2028\u00a0")

// text is a string of a size the shape draws, in many scripts.
func (g *gen) text() string {
	n := g.rnd.Intn(120)
	switch {
	case g.s.sizes == "mixed" && g.rnd.Intn(8) == 0:
		n = 600 + g.rnd.Intn(3000) // past the JSON decoder's first reads
	case g.s.sizes == "large" && g.large == 0:
		n = 1<<16 + g.rnd.Intn(600) // past the 64 KiB buffer of the reader
	}
	if g.s.sizes == "large" {
		g.large++
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteRune(runes[g.rnd.Intn(len(runes))])
	}
	return b.String()
}

// data is an order's payload as JSON.
func (g *gen) data() []byte {
	b, _ := json.Marshal(map[string]any{"orderId": fmt.Sprintf("order-%d", g.rnd.Intn(50)), "amount": g.rnd.Intn(1000), "note": g.text()})
	return b
}

// encode writes v as JSON, indented under prefix in a pretty shape.
func (g *gen) encode(v any, prefix string) []byte {
	if g.s.pretty {
		b, err := json.MarshalIndent(v, prefix, "  ")
		if err != nil {
			panic(err)
		}
		return b
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// lines writes one record a line, each from rec, with its id.
func (g *gen) lines(rec func() (any, string)) {
	for i := 0; i < g.s.n; i++ {
		g.space()
		v, id := rec()
		g.want = append(g.want, placed{id, g.line()})
		b, _ := json.Marshal(v) // a line is one line, even in a pretty shape
		g.buf.Write(b)
		if i < g.s.n-1 || g.rnd.Intn(2) == 0 {
			g.nl()
		}
	}
	g.space()
}

// array writes recs as JSON arrays (one or several, one after another).
func (g *gen) array(recs []func() (any, string), prefix string) {
	for first := true; first || len(recs) > 0; first = false {
		n := len(recs)
		if n > 1 && prefix == "" && g.rnd.Intn(3) == 0 {
			n = 1 + g.rnd.Intn(n) // several arrays one after another
		}
		g.space()
		g.buf.WriteString("[")
		for i, rec := range recs[:n] {
			if i > 0 {
				g.buf.WriteString(",")
			}
			if g.s.pretty || g.s.blanks {
				g.nl()
				g.space()
				g.buf.WriteString(prefix + "  ")
			}
			v, id := rec()
			g.want = append(g.want, placed{id, g.line()})
			g.buf.Write(g.encode(v, prefix+"  "))
		}
		if g.s.pretty {
			g.nl()
			g.buf.WriteString(prefix)
		}
		g.buf.WriteString("]")
		recs = recs[n:]
		if prefix == "" {
			g.nl()
		}
	}
}

func (g *gen) cloudEvent() (any, string) {
	id, source := g.uuid(), ""
	if g.rnd.Intn(3) > 0 {
		source = "/orders"
	}
	ev := struct {
		SpecVersion string          `json:"specversion"`
		ID          string          `json:"id"`
		Source      string          `json:"source,omitempty"`
		Type        string          `json:"type"`
		Subject     string          `json:"subject,omitempty"`
		Data        json.RawMessage `json:"data"`
	}{"1.0", id, source, "order.created", fmt.Sprintf("order-%d", g.rnd.Intn(9)), g.data()}
	return ev, cloudEventID(source, id)
}

func (g *gen) many(rec func() (any, string)) []func() (any, string) {
	recs := make([]func() (any, string), g.s.n)
	for i := range recs {
		recs[i] = rec
	}
	return recs
}

// A capture format as the tests write it: name, and a generator.
var generators = []struct {
	name string
	gen  func(g *gen) generated
}{
	{"cloudevents-lines", func(g *gen) generated {
		g.lines(g.cloudEvent)
		return generated{opts: Options{Format: CloudEvents}}
	}},
	{"cloudevents-batch", func(g *gen) generated {
		g.array(g.many(g.cloudEvent), "")
		return generated{opts: Options{Format: CloudEvents}, doc: true}
	}},
	{"cloudevents-pretty", func(g *gen) generated {
		g.s.pretty = true
		for i := 0; i < g.s.n; i++ {
			g.space()
			v, id := g.cloudEvent()
			g.want = append(g.want, placed{id, g.line()})
			g.buf.Write(g.encode(v, ""))
			g.nl()
		}
		return generated{opts: Options{Format: CloudEvents}, doc: true}
	}},
	{"kcat", func(g *gen) generated {
		offsets := map[int]int{}
		g.lines(func() (any, string) {
			id, p := g.uuid(), g.rnd.Intn(3)
			offsets[p]++
			rec := map[string]any{
				"topic": "orders", "partition": p, "offset": offsets[p], "tstype": "create", "ts": 1764410000000 + offsets[p], "broker": 1,
				"headers": []string{"ce_id", id, "ce_source", "/orders", "ce_type", "order.created"},
				"key":     fmt.Sprintf("order-%d", g.rnd.Intn(9)), "payload": string(g.data()),
			}
			return rec, cloudEventID("/orders", id)
		})
		return generated{opts: Options{Format: Kcat}}
	}},
	{"sqs", func(g *gen) generated {
		// ReceiveMessage responses and Lambda events, one a line or
		// pretty-printed, with up to ten messages each.
		for left := g.s.n; left > 0 || g.buf.Len() == 0; {
			n := min(left, g.rnd.Intn(11))
			left -= n
			lambda := g.rnd.Intn(3) == 0
			var msgs []func() (any, string)
			for i := 0; i < n; i++ {
				msgs = append(msgs, func() (any, string) {
					id := g.uuid()
					attrs := map[string]string{"ApproximateReceiveCount": "1", "SentTimestamp": "1764409999000"}
					body, event := string(g.data()), id
					if g.rnd.Intn(4) == 0 {
						// An SNS notification delivered through the queue: its
						// own MessageId is the event's.
						event = g.uuid()
						b, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": event, "TopicArn": "arn:aws:sns:eu-west-1:1:orders", "Message": body})
						body = string(b)
					}
					switch {
					case lambda && g.rnd.Intn(4) == 0:
						return map[string]any{"EventSource": "aws:sns", "Sns": map[string]any{"Type": "Notification", "MessageId": id, "TopicArn": "arn:aws:sns:eu-west-1:1:orders", "Subject": nil, "Message": string(g.data())}}, id
					case lambda:
						return map[string]any{"messageId": id, "receiptHandle": "AQEB" + id, "body": body, "attributes": attrs, "eventSource": "aws:sqs"}, event
					}
					return map[string]any{"MessageId": id, "ReceiptHandle": "AQEB" + id, "MD5OfBody": "0123456789abcdef", "Body": body, "Attributes": attrs}, event
				})
			}
			g.space()
			g.buf.WriteString("{")
			meta := `"ResponseMetadata": {"RequestId": "` + g.uuid() + `", "HTTPStatusCode": 200}`
			before, sep := g.rnd.Intn(2) == 0, ""
			if before {
				g.buf.WriteString(meta)
				sep = ","
			}
			if n > 0 || g.rnd.Intn(2) == 0 {
				g.buf.WriteString(sep)
				if g.s.pretty {
					g.nl()
					g.buf.WriteString("  ")
				}
				if lambda {
					g.buf.WriteString(`"Records": `)
				} else {
					g.buf.WriteString(`"Messages": `)
				}
				g.array(msgs, "  ")
				sep = ","
			}
			if !before {
				g.buf.WriteString(sep + meta)
			}
			if g.s.pretty {
				g.nl()
			}
			g.buf.WriteString("}")
			g.nl()
			if left == 0 {
				break
			}
		}
		return generated{opts: Options{Format: SQS}, doc: true}
	}},
	{"nats", func(g *gen) generated {
		for i := 0; i < g.s.n; i++ {
			id := g.uuid()
			msg := map[string]any{
				"Subject": "orders.created", "Reply": fmt.Sprintf("$JS.ACK.ORDERS.billing.1.%d.%d.1764410000000000000.0", i+1, i+1),
				"Header": map[string][]string{"Nats-Msg-Id": {id}}, "Data": base64.StdEncoding.EncodeToString(g.data()), "Sub": nil,
			}
			if g.s.blanks && g.rnd.Intn(3) == 0 {
				g.nl()
			}
			g.want = append(g.want, placed{id, i + 1})
			g.buf.Write(g.encode(msg, ""))
			g.buf.WriteByte(0)
		}
		return generated{opts: Options{Format: NATS}}
	}},
	{"ndjson", func(g *gen) generated {
		g.lines(func() (any, string) {
			id := g.uuid()
			return map[string]any{"eventId": id, "order": map[string]any{"id": fmt.Sprintf("order-%d", g.rnd.Intn(9))}, "note": g.text()}, id
		})
		return generated{opts: Options{Format: NDJSON, ID: "eventId", Key: "order.id"}}
	}},
}

// parserFor is a fresh record parser of the format opts names (kcat's
// keeps the offsets it has seen).
func parserFor(name string, opts Options) recordParser {
	switch opts.Format {
	case Kcat:
		return kcatRecord(name, opts)
	case SQS:
		return sqsRecord(name, opts)
	case NATS:
		return natsRecord(name, opts)
	case NDJSON:
		return plainRecord(name, opts)
	}
	return cloudRecord(name, opts)
}

func reference(name string, g generated) reading {
	parse := parserFor(name, g.opts)
	switch {
	case g.doc:
		return referenceDocs(name, g.data, g.opts.Format == SQS, parse)
	case g.opts.Format == NATS:
		return referenceLines(name, g.data, 0, true, parse)
	}
	return referenceLines(name, g.data, '\n', false, parse)
}

func runSeed() int64 {
	if *captureSeed != 0 {
		return *captureSeed
	}
	return time.Now().UnixNano()
}

// TestReadersAtEveryReadSize: every format, in captures of many sizes and
// shapes, reads through every reader as the reference reading reads the
// same bytes in memory: the same events, in the same order, on the same
// lines, whatever the size of the reads.
func TestReadersAtEveryReadSize(t *testing.T) {
	seed := runSeed()
	for gi, gf := range generators {
		t.Run(gf.name, func(t *testing.T) {
			t.Parallel()
			for si, s := range shapes {
				genSeed := seed + int64(gi*100+si)
				g := &gen{rnd: rand.New(rand.NewSource(genSeed)), s: s}
				c := gf.gen(g)
				c.data, c.truth = g.buf.Bytes(), g.want
				want := reference("c", c)
				where := fmt.Sprintf("seed %d (go test -run 'TestReadersAtEveryReadSize/%s' -capture.seed=%d), shape %s", seed, gf.name, seed, s)
				if want.err != nil || len(want.bad) > 0 || len(want.events) != len(c.truth) {
					t.Fatalf("%s: the reference reading found %d events, bad %v, error %v; %d were written", where, len(want.events), want.bad, want.err, len(c.truth))
				}
				for i, p := range c.truth {
					if ev := want.events[i]; !strings.HasSuffix(ev.ID, p.id) || ev.At.Line != p.line {
						t.Fatalf("%s: the reference reading's event #%d is %s at line %d; %s was written at line %d", where, i+1, ev.ID, ev.At.Line, p.id, p.line)
					}
				}
				in := c.data
				if s.gzip {
					var z bytes.Buffer
					zw := gzip.NewWriter(&z)
					zw.Write(c.data)
					zw.Close()
					in = z.Bytes()
				}
				for wi, w := range readWays {
					readSeed := genSeed*10 + int64(wi)
					got := readWith("c", w.wrap(bytes.NewReader(in), readSeed), c.opts)
					if d := sameReading(got, want); d != "" {
						t.Fatalf("%s, %s reads: %s", where, w.name, d)
					}
				}
				if !s.gzip || len(in) < 40 {
					continue
				}
				// Cut short: the records before the cut, then one fatal
				// bad record where the data ends, the same at every read
				// size.
				cut := in[:20+g.rnd.Intn(len(in)-20)]
				whole := readWith("c", bytes.NewReader(cut), c.opts)
				if n := len(whole.bad); n == 0 || !whole.bad[n-1].Fatal || len(whole.events) > len(want.events) {
					t.Fatalf("%s, gzip cut at %d of %d bytes: %d events, bad records %+v; want a fatal bad record last", where, len(cut), len(in), len(whole.events), whole.bad)
				}
				for wi, w := range readWays[1:] {
					got := readWith("c", w.wrap(bytes.NewReader(cut), genSeed*10+int64(wi)), c.opts)
					if d := sameReading(got, whole); d != "" {
						t.Fatalf("%s, gzip cut at %d of %d bytes, %s reads: %s", where, len(cut), len(in), w.name, d)
					}
				}
			}
		})
	}
}

// TestBadRecordsAreCountedAtEveryReadSize: in every format a record that
// cannot be read is a bad record at its line, and the records around it
// are read, whatever the size of the reads; none is passed over unsaid.
func TestBadRecordsAreCountedAtEveryReadSize(t *testing.T) {
	ce := func(id string) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"t","data":{"n":1}}`
	}
	ceLong := func(id string, n int) string {
		return `{"specversion":"1.0","id":"` + id + `","source":"/s","type":"t","data":{"note":"` + strings.Repeat("é", n/2) + `"}}`
	}
	sqsMsg := func(id string) string { return `{"MessageId":"` + id + `","Body":"{\"n\":1}"}` }
	natsMsg := func(id string) string {
		return `{"Subject":"orders","Reply":"","Header":{"Nats-Msg-Id":["` + id + `"]},"Data":"eyJuIjoxfQ=="}`
	}
	kcat := func(id string, off int) string {
		return fmt.Sprintf(`{"topic":"t","partition":0,"offset":%d,"key":"k","payload":"{\"n\":1}","headers":["ce_id","%s"]}`, off, id)
	}
	tests := []struct {
		name  string
		opts  Options
		in    string
		ids   []placed // good records: id and line
		bad   []badAt  // bad records: line and whether the read stops there
		fatal bool
	}{
		{"cloudevents lines", Options{Format: CloudEvents}, ce("a") + "\n" +
			`{"specversion":"1.0","id":` + "\n" + // cut short
			"\n" +
			`{"specversion":"1.0","source":"/s","type":"t"}` + "\n" + // no id
			`[1]` + "\n" +
			ce("b") + "\r\n" +
			"{\"specversion\":\"1.0\",\"id\":\"\xff\"}\n" +
			`{"specversion":"1.0","id":"x","id":"y"}` + "\n" +
			ce("c") + "\n" +
			`{"specversion":"1.0",`,
			[]placed{{"/s/a", 1}, {"/s/b", 6}, {"/s/c", 9}},
			[]badAt{{Line: 2}, {Line: 4}, {Line: 5}, {Line: 7}, {Line: 8}, {Line: 10}}, false},
		{"cloudevents batch", Options{Format: CloudEvents}, "[\n" + ce("a") + ",\n" +
			`{"specversion":"1.0","source":"/s"},` + "\n" +
			"1,\n" +
			`{"specversion":"1.0","id":{"x":1}},` + "\n" +
			ce("b") + "\n]\n",
			[]placed{{"/s/a", 2}, {"/s/b", 6}},
			[]badAt{{Line: 3}, {Line: 4}, {Line: 5}}, false},
		{"cloudevents batch cut short", Options{Format: CloudEvents}, "[\n" + ce("a") + ",\n" + ce("b") + ",\n" + `{"specversion":"1.0",` + "\n",
			[]placed{{"/s/a", 2}, {"/s/b", 3}},
			[]badAt{{Line: 5, Fatal: true}}, true},
		{"pretty events", Options{Format: CloudEvents}, "{\n  \"specversion\": \"1.0\",\n  \"source\": \"/s\"\n}\n{\n  \"specversion\": \"1.0\",\n  \"id\": \"a\"\n}\n",
			[]placed{{"a", 5}},
			[]badAt{{Line: 1}}, false},
		{"cloudevents lines too long", Options{Format: CloudEvents, MaxRecord: 1000}, ce("a") + "\n" +
			ceLong("l", 1500) + "\n" +
			ceLong("m", 70000) + "\n" +
			ce("b") + "\n",
			[]placed{{"/s/a", 1}, {"/s/b", 4}},
			[]badAt{{Line: 2}, {Line: 3}}, false},
		{"cloudevents batch too long", Options{Format: CloudEvents, MaxRecord: 1000}, "[\n" + ce("a") + ",\n\n" + ceLong("l", 1500) + ",\n" + ce("b") + "\n]\n",
			[]placed{{"/s/a", 2}},
			[]badAt{{Line: 4, Fatal: true}}, true},
		{"cloudevents batch far too long", Options{Format: CloudEvents, MaxRecord: 1000}, "[\n" + ce("a") + ",\n\n" + ceLong("m", 70000) + ",\n" + ce("b") + "\n]\n",
			[]placed{{"/s/a", 2}},
			[]badAt{{Line: 4, Fatal: true}}, true},
		{"sqs too long", Options{Format: SQS, MaxRecord: 1000}, `{"Messages":[` + sqsMsg("a") + "]}\n" + `{"Messages":[` + "\n" + `{"MessageId":"l","Body":"` + strings.Repeat("é", 750) + `"}` + "]}\n",
			[]placed{{"a", 1}},
			[]badAt{{Line: 3, Fatal: true}}, true},
		{"kcat", Options{Format: Kcat}, kcat("a", 1) + "\n" +
			`{"topic":"t","partition":0,"key":"k"}` + "\n" + // no offset
			`{"topic":` + "\n" +
			kcat("b", 2) + "\n",
			[]placed{{"a", 1}, {"b", 4}},
			[]badAt{{Line: 2}, {Line: 3}}, false},
		{"sqs", Options{Format: SQS}, `{"Messages":[` + sqsMsg("a") + `,{"Body":"no id"},` + sqsMsg("b") + "]}\n" +
			`{"Messages":"none"}` + "\n" +
			sqsMsg("alone") + "\n" +
			`{"Records":[{"messageId":"c","body":"x"},{"eventSource":"aws:s3"}]}` + "\n" +
			`{"Messages":{"MessageId":"d"}}` + "\n" +
			`{"Messages":[` + sqsMsg("e") + "]}\n" +
			"{}\n" + // an empty receive
			`{"ResponseMetadata":{"RequestId":"r"}}` + "\n" +
			`{"specversion":"1.0","id":"f","source":"/s"}` + "\n" +
			`{"Messages":[` + sqsMsg("g") + "]}\n",
			[]placed{{"a", 1}, {"b", 1}, {"c", 4}, {"e", 6}, {"g", 10}},
			[]badAt{{Line: 1}, {Line: 2}, {Line: 3}, {Line: 4}, {Line: 5}, {Line: 9}}, false},
		{"sqs cut short", Options{Format: SQS}, `{"Messages":[` + sqsMsg("a") + "]}\n" + `{"Messages":[` + sqsMsg("b") + ",\n" + `{"Mess`,
			[]placed{{"a", 1}, {"b", 2}},
			[]badAt{{Line: 3, Fatal: true}}, true},
		{"nats", Options{Format: NATS}, natsMsg("a") + "\x00" +
			`{"Reply":"","Data":"eyJuIjoxfQ=="}` + "\x00" + // no subject
			"not json\x00" +
			`{"Subject":"orders","Data":"eyJuIjoxfQ=="}` + "\x00" + // no id
			`{"Subject":"orders","Header":{"Nats-Msg-Id":["x"]},"Data":"%%%"}` + "\x00" +
			natsMsg("b") + "\x00" +
			`{"Subject":"or`,
			[]placed{{"a", 1}, {"b", 6}},
			[]badAt{{Line: 2}, {Line: 3}, {Line: 4}, {Line: 5}, {Line: 7}}, false},
		{"ndjson", Options{Format: NDJSON, ID: "eventId"}, `{"eventId":"a"}` + "\n" +
			`{"other":1}` + "\n" +
			`{"eventId":` + "\n" +
			`{"eventId":{"x":1}}` + "\n" +
			`"a string"` + "\n" +
			`{"eventId":"b"}`,
			[]placed{{"a", 1}, {"b", 6}},
			[]badAt{{Line: 2}, {Line: 3}, {Line: 4}, {Line: 5}}, false},
	}
	seed := runSeed()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for wi, w := range readWays {
				got := readWith("c", w.wrap(strings.NewReader(tt.in), seed+int64(wi)), tt.opts)
				var ids []placed
				for _, ev := range got.events {
					ids = append(ids, placed{ev.ID, ev.At.Line})
				}
				var bad []badAt
				for _, b := range got.bad {
					if b.Reason == "" {
						t.Errorf("%s reads: a bad record at line %d says nothing", w.name, b.Line)
					}
					bad = append(bad, badAt{Line: b.Line, Fatal: b.Fatal})
				}
				if got.err != nil || !reflect.DeepEqual(ids, tt.ids) || !reflect.DeepEqual(bad, tt.bad) {
					t.Errorf("%s reads (seed %d): events %v, bad records %+v, error %v; want events %v, bad records %+v", w.name, seed, ids, got.bad, got.err, tt.ids, tt.bad)
				}
			}
		})
	}
}
