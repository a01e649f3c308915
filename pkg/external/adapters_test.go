package external

// The broker adapters register their target kinds when they are linked
// in, as cmd/sources.go links them into the binary.
import (
	_ "github.com/redeliver/redeliver/pkg/amqp"
	_ "github.com/redeliver/redeliver/pkg/kafka"
	_ "github.com/redeliver/redeliver/pkg/nats"
)
