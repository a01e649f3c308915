package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// A Target is the broker a scenario's target publishes into, as its file
// names it. The file format parses each broker's fields into a type of
// its own (pkg/scenario links no client); the broker's adapter, registered
// under the same kind, opens it.
type Target interface {
	// Kind is the target's key in the file (nats, amqp, kafka), under
	// which its adapter registers.
	Kind() string
	// DrainTimeout is how long the consumer may take to drain what a
	// check published.
	DrainTimeout() time.Duration
}

// An Adapter is what a broker's package registers for the targets of its
// kind: how to open one, and what only that broker can say.
type Adapter struct {
	// Name is the broker in a report's words: JetStream, RabbitMQ, Kafka.
	Name string
	// Open connects to the target's broker. describe says where it
	// publishes in a report's words, with no secret of the URL.
	Open func(ctx context.Context, t Target) (p Publisher, describe string, err error)
	// Leftover says what the broker held for the target's consumer
	// before the run, given its counts and why that stops the run, and
	// how to empty it.
	Leftover func(t Target, c Counts, why string) string
	// AckWord is how a statement trace marks the consumer's ack where
	// the broker shows it to another client ("acked", "offset
	// committed"); empty where it shows none (a RabbitMQ queue counts an
	// unacknowledged message as held, not as taken).
	AckWord string
	// ReadsBack says what the log at in is ("topic", "stream") when that
	// capture, which a replay reads by URL, is the one the target's
	// consumer reads, so that the replay would read back its own
	// deliveries, and "" when it is not. Nil where no capture of this
	// broker is read by URL.
	ReadsBack func(t Target, in string) string
}

var (
	adaptersMu sync.RWMutex
	adapters   = map[string]Adapter{}
)

// Register makes the adapter open the targets of kind. Each broker's
// package registers in its init; registering a kind twice panics.
func Register(kind string, a Adapter) {
	adaptersMu.Lock()
	defer adaptersMu.Unlock()
	if _, dup := adapters[kind]; dup {
		panic("broker: a second adapter registered for " + kind)
	}
	adapters[kind] = a
}

// AdapterOf is the adapter registered for the target's kind; an error
// names the kinds that are, when none is (its package was not linked in).
func AdapterOf(t Target) (Adapter, error) {
	adaptersMu.RLock()
	defer adaptersMu.RUnlock()
	if a, ok := adapters[t.Kind()]; ok {
		return a, nil
	}
	kinds := make([]string, 0, len(adapters))
	for k := range adapters {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	return Adapter{}, fmt.Errorf("no broker adapter is linked in for target %s (linked: %s)", t.Kind(), strings.Join(kinds, ", "))
}

// Count says n of a broker's things in an adapter's sentence: "1
// message", "3 records".
func Count(n int64, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
