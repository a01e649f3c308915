package replay

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/nats"
	"github.com/redeliver/redeliver/pkg/problem"
)

// natsServer returns the NATS server with JetStream the stream tests use;
// where none answers they are skipped, saying so, except under CI.
func natsServer(t *testing.T) string {
	t.Helper()
	url := os.Getenv("REDELIVER_TEST_NATS")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "nats://"), 2*time.Second)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("NATS with JetStream is needed at %s under CI: %v", url, err)
		}
		t.Skipf("no NATS at %s (%v): stream replay tests skipped; start nats-server -js or set REDELIVER_TEST_NATS", url, err)
	}
	c.Close()
	return url
}

// publishCapture publishes every event of a CloudEvents NDJSON capture
// into a new stream, each under its own message id (an outbox publishing
// the repeats again), and deletes the stream when the test ends.
func publishCapture(t *testing.T, url, file string, mode broker.Mode) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	stream := "RDLV_REPLAY_" + strings.ToUpper(hex.EncodeToString(b))
	subject, _ := broker.ParseRoute(strings.ToLower(stream) + ".{type}")
	ctx := context.Background()
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	t.Cleanup(func() {
		if err := js.DeleteStream(context.Background(), stream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", stream, err)
		}
	})
	p, err := nats.Open(ctx, nats.Config{URL: url, Stream: stream, Subject: subject, Create: true, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var ev struct {
			ID, Source, Type, Subject, Time string
			Data                            json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		m := broker.Message{ID: ev.ID, Source: ev.Source, Type: ev.Type, Subject: ev.Subject, Time: ev.Time, Data: ev.Data, MsgID: fmt.Sprintf("%s#%d", ev.ID, n)}
		if _, err := p.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	return stream
}

// TestStreamReplaysAsItsFile publishes a capture into JetStream (in both
// content modes) and replays the stream: the report must say what the
// file's report says, with stream sequences where the file has lines.
func TestStreamReplaysAsItsFile(t *testing.T) {
	url := natsServer(t)
	file := sample("cloudevents.ndjson")
	want := run(t, Options{Inputs: []string{file}, Seed: 7, Redeliver: 0.3, Rewind: 3})
	for _, mode := range []broker.Mode{broker.Binary, broker.Structured} {
		t.Run(string(mode), func(t *testing.T) {
			stream := publishCapture(t, url, file, mode)
			in := url + "/" + stream
			got := run(t, Options{Inputs: []string{in}, Seed: 7, Redeliver: 0.3, Rewind: 3})
			if got.Inputs[0].Format != "nats" {
				t.Errorf("format %q, want nats", got.Inputs[0].Format)
			}
			// The same findings and outcomes, placed at sequences.
			gj, _ := json.Marshal(struct{ C, I, O, V any }{got.Capture, got.Injected, got.Outcomes, got.Violations})
			wj, _ := json.Marshal(struct{ C, I, O, V any }{want.Capture, want.Injected, want.Outcomes, want.Violations})
			if w := strings.ReplaceAll(string(wj), file, in); string(gj) != w {
				t.Errorf("stream report\n got %s\nwant %s", gj, w)
			}
			if !reflect.DeepEqual(got.Counters, want.Counters) || got.Effects != want.Effects || got.Verdict != want.Verdict {
				t.Errorf("counters %+v effects %d verdict %s; want %+v %d %s", got.Counters, got.Effects, got.Verdict, want.Counters, want.Effects, want.Verdict)
			}
		})
	}
}

func TestStreamFromSequence(t *testing.T) {
	url := natsServer(t)
	stream := publishCapture(t, url, sample("cloudevents.ndjson"), broker.Binary)
	for _, c := range []struct {
		query      string
		deliveries int64
	}{{"", 10}, {"?seq=1", 10}, {"?seq=4", 7}, {"?seq=10", 1}, {"?seq=11", 0}} {
		got := run(t, Options{Inputs: []string{url + "/" + stream + c.query}})
		if got.Capture.Deliveries != c.deliveries {
			t.Errorf("%s: %d deliveries read, want %d", c.query, got.Capture.Deliveries, c.deliveries)
		}
	}
	// The stream keeps no consumer behind.
	nc, err := natsgo.Connect(url, natsgo.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("%d consumers left on the stream after replays", info.State.Consumers)
	}
}

func TestStreamInputErrors(t *testing.T) {
	url := natsServer(t)
	for _, c := range []struct {
		in, want string
		input    bool
	}{
		{"nats://127.0.0.1:4222/", "names no stream", true},
		{"nats://127.0.0.1:4222/A.B", "names no stream", true},
		{"nats://127.0.0.1:4222/S?seq=x", "not a stream sequence", true},
		{"nats://127.0.0.1:4222/S?from=1", "unknown parameter", true},
		{url + "/RDLV_NO_SUCH_STREAM_EVER", "does not exist", false},
	} {
		_, err := runSQLite(context.Background(), Options{Inputs: []string{c.in}, DB: ":memory:"})
		input := problem.KindOf(err) == problem.InvalidInput
		if err == nil || !strings.Contains(err.Error(), c.want) || input != c.input {
			t.Errorf("%s: got %v (input error: %v), want %q (input error: %v)", c.in, err, input, c.want, c.input)
		}
	}
}
