package proc

// The nemesis kills consumer instances at random and restarts them, so
// that a broker redelivers whatever a killed instance held in flight:
// JetStream once AckWait passes, RabbitMQ as soon as the channel closes.
// It also picks, by --seed, the deliveries whose worker is killed while
// working on them (Working, working.go). The instances it kills are its
// caller's: an Instance is anything that can crash and come back.

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
	Instance int           // index of the instance killed
	At       time.Duration // since Run began
	// Restart is how long the instance took from the kill until it was
	// ready again; zero while it is restarting.
	Restart time.Duration
}

// Nemesis kills one instance, picked from its seed, every period.
type Nemesis struct {
	every     time.Duration
	instances []Instance
	rng       *rand.Rand

	mu    sync.Mutex
	kills []Kill
}

// NewNemesis makes a nemesis over the instances; the same seed picks the same
// instances in the same order.
func NewNemesis(every time.Duration, seed int64, instances []Instance) *Nemesis {
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
		at := time.Since(start)
		n.mu.Lock()
		n.kills = append(n.kills, Kill{Instance: i, At: at})
		k := len(n.kills) - 1
		n.mu.Unlock()
		// The restart is not cut short by ctx: an instance is never left
		// half-started.
		err := n.instances[i].Crash(context.WithoutCancel(ctx))
		n.mu.Lock()
		n.kills[k].Restart = time.Since(start) - at
		n.mu.Unlock()
		if err != nil {
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

// Pace is what the kills came to: the period a nemesis asks for counts
// from when the previous restart is ready, so the kills come further
// apart than it by the time the instances take to start again.
type Pace struct {
	Kills   int
	Asked   time.Duration // the period asked for
	Every   time.Duration // the mean time from one kill to the next, the first counted from the start
	Restart time.Duration // the mean time a killed instance took to be ready again
}

// Pace says how many kills were made and how far apart they came.
func (n *Nemesis) Pace() Pace {
	return PaceOf(n.every, n.Kills())
}

// PaceOf is the pace of kills made under the period asked.
func PaceOf(asked time.Duration, kills []Kill) Pace {
	p := Pace{Kills: len(kills), Asked: asked}
	if len(kills) == 0 {
		return p
	}
	p.Every = kills[len(kills)-1].At / time.Duration(len(kills))
	var restarts time.Duration
	for _, k := range kills {
		restarts += k.Restart
	}
	p.Restart = restarts / time.Duration(len(kills))
	return p
}
