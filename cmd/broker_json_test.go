package cmd

import (
	"bytes"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
)

// TestBrokerCountersMatchTheSchema: a broker target's counters carry
// published and broker_redelivered, and the documented schema takes them.
func TestBrokerCountersMatchTheSchema(t *testing.T) {
	toRoot(t)
	c := consumer.Counters{Deliveries: 3, Processed: 3, Effects: 1, Redeliveries: 2, Published: 3, BrokerRedelivered: 1}
	f := &runner.FileResult{File: "nats.yaml", Name: "nats", Strategy: "target", Target: "NATS stream S", Effects: "table payments", Counters: c,
		Checks: []runner.CheckResult{{Name: "three times", Passed: true, Counters: c, Line: said("three times: 3 deliveries")}}}
	var out bytes.Buffer
	if err := report.JSON(&out, &report.Run{Command: "run", Files: []*runner.FileResult{f}, Seed: 1, Store: report.StoreTarget}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte(`"published": 3`)) || !bytes.Contains(out.Bytes(), []byte(`"broker_redelivered": 1`)) {
		t.Fatalf("the counters do not carry the broker's: %s", out.String())
	}
	validJSON(t, out.String())
}
