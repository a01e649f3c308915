package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/tidwall/gjson"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sizedRecord is a record the size tests write to a topic or a stream:
// its event id and payload, or, when bad, one the capture reader must
// count as a bad record at its place.
type sizedRecord struct {
	id   string
	data []byte
	bad  bool
}

// recordSizes are the payload sizes written: empty to past every buffer
// on the way (the readers' 64 KiB, the JSON decoder's first reads), with
// some drawn at random.
func recordSizes(rnd *mrand.Rand, most int) []int {
	sizes := []int{0, 1, 17, 200, 511, 513, 4000, 65535, 65537, 70000, 150000, 300000}
	for i := 0; i < 8; i++ {
		sizes = append(sizes, rnd.Intn(2000), rnd.Intn(100000))
	}
	var out []int
	for _, n := range sizes {
		if n <= most {
			out = append(out, n)
		}
	}
	rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

var noteRunes = []rune("abc XYZ 0123456789 \"\\/\n\té中文😀\u2028")

// sizedRecords is one record of each size, every fifth one bad.
func sizedRecords(t *testing.T, most int) ([]sizedRecord, int64) {
	seed := time.Now().UnixNano()
	rnd := mrand.New(mrand.NewSource(seed))
	var recs []sizedRecord
	for i, n := range recordSizes(rnd, most) {
		var note strings.Builder
		for note.Len() < n {
			note.WriteRune(noteRunes[rnd.Intn(len(noteRunes))])
		}
		data, err := json.Marshal(map[string]any{"orderId": fmt.Sprintf("order-%d", i), "note": note.String()})
		if err != nil {
			t.Fatal(err)
		}
		var id [16]byte
		rnd.Read(id[:])
		recs = append(recs, sizedRecord{id: fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:]), data: data, bad: i%5 == 4})
	}
	return recs, seed
}

// badEvent is a structured CloudEvent without an id: a record that
// cannot be read.
const badEvent = `{"specversion":"1.0","source":"/orders","type":"order.created","data":{}}`

// readSource reads a replay input to its end: the events, and the places
// of its bad records.
func readSource(t *testing.T, in string) ([]capture.Event, []int) {
	t.Helper()
	src, err := OpenCapture(context.Background(), in, nil, capture.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var evs []capture.Event
	var bad []int
	for {
		ev, err := src.Next()
		if err == io.EOF {
			return evs, bad
		}
		var be *capture.BadRecordError
		if errors.As(err, &be) && !be.Fatal {
			bad = append(bad, be.At.Line)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

// checkSized compares what a source read with the records written there,
// in the order the source gives them (place 1, 2, …).
func checkSized(t *testing.T, seed int64, recs []sizedRecord, idOf func(string) string, evs []capture.Event, bad []int) {
	t.Helper()
	var wantBad []int
	n := 0
	for i, r := range recs {
		if r.bad {
			wantBad = append(wantBad, i+1)
			continue
		}
		if n >= len(evs) {
			t.Fatalf("seed %d: %d events read, want %d", seed, len(evs), len(recs)-len(wantBad))
		}
		ev := evs[n]
		n++
		if ev.ID != idOf(r.id) || ev.At.Line != i+1 || gjson.GetBytes(ev.Envelope, "data").Raw != string(r.data) {
			t.Fatalf("seed %d: event %d is %s at %d with %d bytes of data; want %s at %d with %d bytes", seed, n, ev.ID, ev.At.Line, len(gjson.GetBytes(ev.Envelope, "data").Raw), idOf(r.id), i+1, len(r.data))
		}
	}
	if n != len(evs) || fmt.Sprint(bad) != fmt.Sprint(wantBad) {
		t.Fatalf("seed %d: %d events and bad records at %v, want %d and %v", seed, len(evs), bad, n, wantBad)
	}
}

// TestTopicReadsRecordsOfEverySize: a Kafka topic of records from empty
// to 300 KB, in two partitions, reads as one delivery a record, partition
// by partition, each at its place in the read, and a record that cannot
// be read is a bad record at its place.
func TestTopicReadsRecordsOfEverySize(t *testing.T) {
	addr := kafkaCluster(t)
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "sizes"); err != nil {
		t.Fatal(err)
	}
	recs, seed := sizedRecords(t, 300000)
	// Partition 0 takes the first half, partition 1 the rest: the read
	// gives them in that order.
	for i, r := range recs {
		rec := &kgo.Record{Topic: "sizes", Partition: int32(2 * i / len(recs)), Key: []byte(fmt.Sprintf("order-%d", i)), Value: r.data,
			Headers: []kgo.RecordHeader{{Key: "ce_id", Value: []byte(r.id)}, {Key: "ce_source", Value: []byte("/orders")}, {Key: "ce_type", Value: []byte("order.created")}}}
		if r.bad {
			rec.Value = []byte(badEvent)
			rec.Headers = []kgo.RecordHeader{{Key: "content-type", Value: []byte("application/cloudevents+json")}}
		}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatalf("produce %d bytes: %v", len(rec.Value), err)
		}
	}
	evs, bad := readSource(t, "kafka://"+addr+"/sizes")
	checkSized(t, seed, recs, func(id string) string { return "/orders/" + id }, evs, bad)
}

// TestStreamReadsRecordsOfEverySize: a JetStream stream of messages from
// empty to as large as the server takes reads as one delivery a message,
// each at its sequence, and one that cannot be read is a bad record at
// its sequence.
func TestStreamReadsRecordsOfEverySize(t *testing.T) {
	url := natsServer(t)
	ctx := context.Background()
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close) // after the stream is deleted
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	stream := "RDLV_SIZES_" + strings.ToUpper(hex.EncodeToString(b))
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), stream); err != nil {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
	// A message's JSON dump grows its data by a third (base64): the
	// largest ones stay under the capture reader's 1 MiB record limit
	// and the server's payload limit.
	recs, seed := sizedRecords(t, int(min(nc.MaxPayload()-1024, 300000)))
	for _, r := range recs {
		m := &natsgo.Msg{Subject: strings.ToLower(stream) + ".created", Header: natsgo.Header{}, Data: r.data}
		m.Header.Set("Nats-Msg-Id", r.id)
		if r.bad {
			m.Data = []byte(badEvent)
			m.Header.Set("Content-Type", "application/cloudevents+json")
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("publish %d bytes: %v", len(m.Data), err)
		}
	}
	evs, bad := readSource(t, url+"/"+stream)
	checkSized(t, seed, recs, func(id string) string { return id }, evs, bad)
}
