package cmd

// The logs a replay reads by URL: each adapter registers its scheme
// (nats://, kafka://) with the capture readers when it is linked in.
import (
	_ "github.com/redeliver/redeliver/pkg/kafka"
	_ "github.com/redeliver/redeliver/pkg/nats"
)
