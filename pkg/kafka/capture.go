package kafka

import (
	"context"

	"github.com/redeliver/redeliver/pkg/broker"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/problem"
)

func init() { capture.RegisterSource("kafka", openTopic) }

// openTopic reads a Kafka topic as a capture: its records, partition by
// partition in offset order, each placed at its place in the read where a
// file has a line.
func openTopic(ctx context.Context, name string, opts capture.Options) (*capture.Reader, error) {
	u, err := broker.ParseTopicURL(name)
	if err != nil {
		return nil, &problem.Error{Kind: problem.InvalidInput, Msg: err.Error()}
	}
	tr, err := ReadTopic(ctx, u)
	if err != nil {
		return nil, err
	}
	rd, err := capture.OpenRecords(name, capture.Kcat, opts, tr.Next)
	if err != nil {
		tr.Close()
		return nil, err
	}
	rd.OnClose(tr)
	return rd, nil
}
