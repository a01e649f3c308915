package main

// The consumer as a member of a Kafka consumer group: it polls a batch,
// works through each partition's records in offset order (partitions side
// by side), and commits the batch's offsets only after each record's
// transaction committed. A member killed in between leaves its records
// uncommitted; the group rebalances and another member reads them again
// from the last commit, so the same event comes twice and the dedup
// marker must hold. Two flaws move the commit: ack-before-commit commits
// each record's offset just before its work, and commit-before-work
// commits the whole batch as soon as it is polled (what auto-commit on
// poll does); a kill then loses records the group has committed.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kafkaClient is a group member's client. joined is called each time the
// group hands the member its partitions (the first time included, even
// when there are none for it); the client's warnings and errors (a join
// or commit the group refused, a broker away) go to log.
func kafkaClient(b brokerConfig, joined func(), log kgo.Logger) (*kgo.Client, error) {
	heartbeat := min(3*time.Second, b.sessionTimeout/3)
	return kgo.NewClient(
		kgo.SeedBrokers(strings.Split(b.kafka, ",")...),
		kgo.ClientID("example-consumer"),
		kgo.ConsumerGroup(b.group),
		kgo.ConsumeTopics(b.topic),
		kgo.DisableAutoCommit(),    // offsets are committed after the work, below
		kgo.BlockRebalanceOnPoll(), // no partition is taken away mid-batch
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(b.sessionTimeout),
		kgo.HeartbeatInterval(heartbeat),
		kgo.RebalanceTimeout(max(2*b.sessionTimeout, 5*time.Second)),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { joined() }),
		kgo.WithLogger(log),
	)
}

// groupLog is the client's logger: its warnings and errors in the
// consumer's log, so that a member that never gets into its group says
// why.
type groupLog struct{ c *consumer }

func (groupLog) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l groupLog) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	var b strings.Builder
	for i := 0; i+1 < len(keyvals); i += 2 {
		fmt.Fprintf(&b, " %v=%v", keyvals[i], keyvals[i+1])
	}
	l.c.logf("kafka %s: %s%s", strings.ToLower(level.String()), msg, b.String())
}

// consumeKafka says it is consuming once it is a member of the group with
// its partitions, not before: a member still waiting for its first
// assignment reads nothing yet, and one killed then leaves the group
// rebalancing around it.
func consumeKafka(ctx context.Context, c *consumer, b brokerConfig, stdout io.Writer) error {
	var once sync.Once
	cl, err := kafkaClient(b, func() {
		once.Do(func() { fmt.Fprintf(stdout, "consuming %s as group %s (%s)\n", b.topic, b.group, c.flaw) })
	}, groupLog{c})
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	// A poll blocks the group's rebalances until AllowRebalance; leaving
	// the group on the way out is one, so the last poll's hold is let go
	// first (deferred after Close, it runs before it).
	defer cl.AllowRebalance()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = cl.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("connect to Kafka at %s: %w", b.kafka, err)
	}
	owed := false // a commit the group refused, to make again
	for {
		// A poll returns at least every second, so that a refused commit
		// is made again even when no more records come.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, b.prefetch)
		cancel()
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		var fatal error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && fatal == nil {
				fatal = fmt.Errorf("fetch %s partition %d: %w", topic, p, err)
			}
		})
		if fatal != nil {
			return fatal
		}
		refused, err := c.handleBatch(ctx, cl, fs)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		owed = owed || refused
		if owed && fs.NumRecords() == 0 {
			// Every record polled so far is done: commit them all. A
			// partition the group took away meanwhile is no longer
			// among them: its new owner reads it again from the last
			// commit.
			owed = !c.commitDone(ctx, cl)
		}
		cl.AllowRebalance()
	}
}

// handleBatch works through one poll and commits it: each partition's
// records in order, partitions side by side. refused says a commit the
// group refused (it was rebalancing), to make again.
func (c *consumer) handleBatch(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) (refused bool, err error) {
	if fs.NumRecords() == 0 {
		return false, nil
	}
	var mu sync.Mutex
	if c.flaw == flawCommitBeforeWork {
		// The flaw: the offsets go first. A kill during the work below
		// loses records the group will never read again.
		refused = !c.commit(ctx, cl, fs.Records()...)
	}
	var wg sync.WaitGroup
	var firstErr error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range p.Records {
				ok, err := c.handleRecord(ctx, cl, r)
				mu.Lock()
				refused = refused || !ok
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	})
	wg.Wait()
	if firstErr != nil {
		return refused, firstErr
	}
	if c.flaw == flawCommitBeforeWork || c.flaw == flawAckBeforeCommit {
		return refused, nil // committed already
	}
	// After every record's transaction: the safe order.
	return !c.commitDone(ctx, cl), nil
}

// commit commits the records' offsets and reports whether the group took
// the commit. One it refuses (it is rebalancing, or has expired this
// member) is no reason to stop: the loop makes it again. A member that
// keeps its partitions through a rebalance reads on from where it was,
// so without that the records before would stay uncommitted for good;
// where the group has handed a partition to another member meanwhile,
// that member reads its records again, and the dedup marker makes the
// second time a no-op.
func (c *consumer) commit(ctx context.Context, cl *kgo.Client, rs ...*kgo.Record) bool {
	if err := cl.CommitRecords(ctx, rs...); err != nil {
		if ctx.Err() == nil {
			c.logf("commit: %v (made again later)", err)
		}
		return false
	}
	return true
}

// commitDone commits every record polled so far, all of them done.
func (c *consumer) commitDone(ctx context.Context, cl *kgo.Client) bool {
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		if ctx.Err() == nil {
			c.logf("commit: %v (made again later)", err)
		}
		return false
	}
	return true
}

// handleRecord processes one record until it is done: paid, a duplicate,
// or refused for good. A failure that may pass (the database away) is
// tried again in place: Kafka has no per-record redelivery to ask for,
// only the offset the group commits. committed is false when the flaw
// committed the record's offset and the group refused it.
func (c *consumer) handleRecord(ctx context.Context, cl *kgo.Client, r *kgo.Record) (committed bool, err error) {
	header := func(name string) string {
		for _, h := range r.Headers {
			if strings.EqualFold(h.Key, name) {
				return string(h.Value)
			}
		}
		return ""
	}
	ev, err := decodeBrokerMessage(header, r.Value)
	if err != nil {
		c.logf("rejected: %s partition %d offset %d: %v", r.Topic, r.Partition, r.Offset, err)
		return true, nil // skipped: its offset is committed with the batch
	}
	if c.flaw == flawAckBeforeCommit {
		// The flaw: this record's offset is committed, then the work
		// starts; a kill in between loses it.
		ok := c.commit(ctx, cl, r)
		if _, err := c.processAs(ctx, ev, flawSafe); err != nil {
			c.logf("event %s, committed, then: %v", ev.id, err)
		}
		return ok, nil
	}
	for {
		res, err := c.process(ctx, ev)
		switch {
		case errors.Is(err, errConflict) || (err == nil && res.Outcome == "conflict"):
			c.logf("event %s: conflict", ev.id)
			return true, nil
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return true, ctx.Err()
		}
		c.logf("event %s: %v; trying again", ev.id, err)
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
