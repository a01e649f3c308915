package nats

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/redeliver/redeliver/pkg/broker"
)

// A stream read in several fetches leaves no consumer on it once the
// reader is closed: not one per fetch, not one deleted later.
func TestStreamReaderLeavesNoConsumer(t *testing.T) {
	url := server(t)
	js := admin(t, url)
	ctx := context.Background()
	name := unique("READ")
	str, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	deleteStreamAfter(t, js, name)
	const n = 1025 // three fetches of at most 512, the last of one message
	for i := range n {
		if _, err := js.Publish(ctx, name+".e", fmt.Appendf(nil, `{"i":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{0, 700, 1000} {
		r, err := ReadStream(ctx, broker.StreamURL{Server: url, Stream: name, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		want := max(int(seq), 1)
		for {
			_, got, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("from %d: sequence %d, want %d", seq, got, want)
			}
			want++
		}
		if want != n+1 {
			t.Errorf("from %d: read up to %d, want %d", seq, want-1, n)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		info, err := str.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers != 0 {
			t.Errorf("from %d: %d consumers left on the stream after the reader closed", seq, info.State.Consumers)
		}
	}
}
