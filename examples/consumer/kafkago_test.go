package main

// The consumer's Kafka mode once more, written with segmentio/kafka-go's
// Reader instead of franz-go: a Reader joins its group on its first fetch,
// so this consumer says it is consuming before it is a member, where the
// franz-go one waits for its first assignment. A kill then lands on a
// member still joining; a real cluster expires it after its session
// timeout, and so must the cluster of these tests for the verdicts to be
// the same as the franz-go consumer's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// kafkaGoCommand is the name the test binary answers to as the kafka-go
// consumer (testscript.Main puts it on PATH).
const kafkaGoCommand = "kafkago-consumer"

// runKafkaGo is the consumer's --kafka mode with a kafka-go Reader: the
// same flags, store and flaws, one record at a time, its offset
// committed after its transaction (commit-before-work: before it).
func runKafkaGo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitUsage
	}
	if cfg.broker.kafka == "" {
		fmt.Fprintln(stderr, "consumer: the kafka-go consumer needs --kafka")
		return exitUsage
	}
	store, err := openStore(ctx, cfg.db)
	if err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	defer store.close()
	if err := store.createRedeliveries(ctx); err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	c := &consumer{store: store, flaw: cfg.flaw, window: sleepFor(cfg.work), log: stderr}
	b := cfg.broker
	r := kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:           strings.Split(b.kafka, ","),
		GroupID:           b.group,
		Topic:             b.topic,
		StartOffset:       kafkago.FirstOffset,
		SessionTimeout:    b.sessionTimeout,
		HeartbeatInterval: min(3*time.Second, b.sessionTimeout/3),
		RebalanceTimeout:  max(2*b.sessionTimeout, 5*time.Second),
		MaxWait:           500 * time.Millisecond,
		// CommitInterval 0: CommitMessages commits before it returns.
	})
	defer r.Close()
	// Ready before the Reader has joined the group: it joins on the
	// first FetchMessage below.
	fmt.Fprintf(stdout, "consuming %s as group %s (%s)\n", b.topic, b.group, c.flaw)
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return 0
			}
			fmt.Fprintln(stderr, "consumer: fetch:", err)
			return exitTempFail
		}
		header := func(name string) string {
			for _, h := range m.Headers {
				if strings.EqualFold(h.Key, name) {
					return string(h.Value)
				}
			}
			return ""
		}
		ev, err := decodeBrokerMessage(header, m.Value)
		if err != nil {
			c.logf("rejected: partition %d offset %d: %v", m.Partition, m.Offset, err)
		} else {
			work := c.flaw // the handler's flaws, as over HTTP
			if c.flaw == flawCommitBeforeWork || c.flaw == flawAckBeforeCommit {
				// The flaw: the offset goes first; a kill during the
				// work loses the record.
				if err := r.CommitMessages(ctx, m); err != nil {
					c.logf("commit: %v", err)
				}
				work = flawSafe
			}
			for {
				_, err := c.processAs(ctx, ev, work)
				if err == nil || errors.Is(err, errConflict) {
					break
				}
				if ctx.Err() != nil {
					return 0
				}
				c.logf("event %s: %v; trying again", ev.id, err)
				time.Sleep(200 * time.Millisecond)
			}
		}
		// A refused commit (the group rebalancing) is not fatal: whoever
		// holds the partition next reads the record again, and the
		// dedup marker makes that a no-op.
		if err := r.CommitMessages(ctx, m); err != nil && ctx.Err() == nil {
			c.logf("commit: %v", err)
		}
	}
}

// TestKafkaGoReplayUnderNemesis replays a capture into three kafka-go
// members, each ready before it joins, killing one every second: the
// safe one ends with one payment per event, commit-before-work loses
// payments, as the franz-go consumer does (TestKafkaReplayUnderNemesis).
func TestKafkaGoReplayUnderNemesis(t *testing.T) {
	defer parallel(t)()
	pg := pgDSN(t)
	events := scaled(300, 2000)
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	var b strings.Builder
	for i := range events {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order_paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i%100+1)
	}
	if err := os.WriteFile(capture, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ flaw, invariant, work string }{
		{"safe", "", "10ms"},
		{"commit-before-work", "lost-effect", "50ms"},
	} {
		t.Run(tt.flaw, func(t *testing.T) {
			heavyOnly(t, "its subject is the example's kafka-go client; make test replays under kills into the franz-go members (TestKafkaReplayUnderNemesis)")
			defer parallel(t)()
			brokerSlot(t)
			env := map[string]string{"CONSUMER": kafkaGoCommand, "FLAW": tt.flaw, "WORK": tt.work, "DATABASE_URL": freshSchema(t, pg)}
			kafkaCluster(t, env)
			o := redeliver(t, env, "replay", capture, "--target", "examples/consumer/brokers/kafka-target.yaml", "--kill-every", "1s")
			t.Log(o.stdout)
			wantNemesisVerdict(t, o, events, tt.invariant, "members")
		})
	}
}
