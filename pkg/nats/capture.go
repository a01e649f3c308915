package nats

import (
	"context"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/problem"
)

func init() { capture.RegisterSource("nats", openStream) }

// openStream reads a JetStream stream as a capture: its messages, in
// stream order, each placed at its sequence where a file has a line.
func openStream(ctx context.Context, name string, opts capture.Options) (*capture.Reader, error) {
	u, err := broker.ParseStreamURL(name)
	if err != nil {
		return nil, &problem.Error{Kind: problem.InvalidInput, Msg: err.Error()}
	}
	sr, err := ReadStream(ctx, u)
	if err != nil {
		return nil, err
	}
	rd, err := capture.OpenRecords(name, capture.NATS, opts, sr.Next)
	if err != nil {
		sr.Close()
		return nil, err
	}
	rd.OnClose(sr)
	return rd, nil
}
