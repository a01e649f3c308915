package cmd

// The brokers: each adapter registers, when it is linked in, the target
// kind a scenario publishes into (nats:, amqp:, kafka:) with pkg/broker,
// and the logs a replay reads by URL (nats://, kafka://) with the
// capture readers.
import (
	_ "github.com/redeliver/redeliver/pkg/amqp"
	_ "github.com/redeliver/redeliver/pkg/kafka"
	_ "github.com/redeliver/redeliver/pkg/nats"
)
