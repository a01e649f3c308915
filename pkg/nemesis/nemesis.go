// Package nemesis kills consumer instances at random and restarts them,
// so that a broker redelivers whatever a killed instance held in flight:
// JetStream once AckWait passes, RabbitMQ as soon as the channel closes.
package nemesis

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Instance is one running copy of a consumer. Crash kills it (SIGKILL to
// its process group), starts it again and waits until it is ready.
type Instance interface {
	Crash(ctx context.Context) error
}

// Kill is one kill the nemesis made.
type Kill struct {
	Instance int // index of the instance killed
	At       time.Duration
}

// Nemesis kills one instance, picked from its seed, every period.
type Nemesis struct {
	every     time.Duration
	instances []Instance
	rng       *rand.Rand

	mu    sync.Mutex
	kills []Kill
}

// New makes a nemesis over the instances; the same seed picks the same
// instances in the same order.
func New(every time.Duration, seed int64, instances []Instance) *Nemesis {
	return &Nemesis{every: every, instances: instances, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973))}
}

// Run kills until ctx ends, one instance at a time: the next kill comes a
// period after the previous instance is ready again. It returns the first
// restart that failed, or nil when ctx ends.
func (n *Nemesis) Run(ctx context.Context) error {
	if len(n.instances) == 0 || n.every <= 0 {
		<-ctx.Done()
		return nil
	}
	start := time.Now()
	t := time.NewTimer(n.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		i := n.rng.IntN(len(n.instances))
		n.mu.Lock()
		n.kills = append(n.kills, Kill{Instance: i, At: time.Since(start)})
		n.mu.Unlock()
		// The restart is not cut short by ctx: an instance is never left
		// half-started.
		if err := n.instances[i].Crash(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		t.Reset(n.every)
	}
}

// Kills returns the kills made so far.
func (n *Nemesis) Kills() []Kill {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Kill(nil), n.kills...)
}
