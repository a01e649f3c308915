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

// kafkaClient is a group member's client.
func kafkaClient(b brokerConfig) (*kgo.Client, error) {
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
	)
}

func consumeKafka(ctx context.Context, c *consumer, b brokerConfig, stdout io.Writer) error {
	cl, err := kafkaClient(b)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = cl.Ping(pctx)
	cancel()
	if err != nil {
		return fmt.Errorf("connect to Kafka at %s: %w", b.kafka, err)
	}
	fmt.Fprintf(stdout, "consuming %s as group %s (%s)\n", b.topic, b.group, c.flaw)
	for {
		fs := cl.PollRecords(ctx, b.prefetch)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		var fatal error
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && fatal == nil {
				fatal = fmt.Errorf("fetch %s partition %d: %w", topic, p, err)
			}
		})
		if fatal != nil {
			return fatal
		}
		if err := c.handleBatch(ctx, cl, fs); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		cl.AllowRebalance()
	}
}

// handleBatch works through one poll and commits it: each partition's
// records in order, partitions side by side.
func (c *consumer) handleBatch(ctx context.Context, cl *kgo.Client, fs kgo.Fetches) error {
	if fs.NumRecords() == 0 {
		return nil
	}
	if c.flaw == flawCommitBeforeWork {
		// The flaw: the offsets go first. A kill during the work below
		// loses records the group will never read again.
		c.commit(ctx, cl, fs.Records()...)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range p.Records {
				if err := c.handleRecord(ctx, cl, r); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	})
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if c.flaw == flawCommitBeforeWork || c.flaw == flawAckBeforeCommit {
		return nil // committed already
	}
	// After every record's transaction: the safe order.
	c.commit(ctx, cl, fs.Records()...)
	return nil
}

// commit commits the records' offsets. A commit the group refuses (it is
// rebalancing, or has already handed the partition to another member) is
// no reason to stop: the records come again, to this member or another,
// and the dedup marker makes the second time a no-op.
func (c *consumer) commit(ctx context.Context, cl *kgo.Client, rs ...*kgo.Record) {
	if err := cl.CommitRecords(ctx, rs...); err != nil && ctx.Err() == nil {
		c.logf("commit: %v (the records will be read again)", err)
	}
}

// handleRecord processes one record until it is done: paid, a duplicate,
// or refused for good. A failure that may pass (the database away) is
// tried again in place: Kafka has no per-record redelivery to ask for,
// only the offset the group commits.
func (c *consumer) handleRecord(ctx context.Context, cl *kgo.Client, r *kgo.Record) error {
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
		return nil // skipped: its offset is committed with the batch
	}
	if c.flaw == flawAckBeforeCommit {
		// The flaw: this record's offset is committed, then the work
		// starts; a kill in between loses it.
		c.commit(ctx, cl, r)
		if _, err := c.processAs(ctx, ev, flawSafe); err != nil {
			c.logf("event %s, committed, then: %v", ev.id, err)
		}
		return nil
	}
	for {
		res, err := c.process(ctx, ev)
		switch {
		case errors.Is(err, errConflict) || (err == nil && res.Outcome == "conflict"):
			c.logf("event %s: conflict", ev.id)
			return nil
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		}
		c.logf("event %s: %v; trying again", ev.id, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
