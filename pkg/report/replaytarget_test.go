package report

import (
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
)

// TestTargetReplayLine: a replay into a target is named by the captures
// given, and its line is worded from the report's facts: the counters
// (a broker's publishes instead of deliveries), when the crashes came,
// the effect table or query, the kills of --kill-every or
// --kill-working, the bad records skipped and the invariants caught. A
// replay that stopped first has neither.
func TestTargetReplayLine(t *testing.T) {
	crashes := func(before, after, unknown int) consumer.Counters {
		return consumer.Counters{Deliveries: before + after + unknown, Processed: after + unknown, Failed: before,
			Crashed: before + after + unknown, CrashedBeforeAnswer: before, CrashedAfterAnswer: after, Effects: 1}
	}
	for _, tt := range []struct {
		name     string
		rep      replay.Report
		wantName string
		wantLine string
	}{
		{"a replay whose crash interrupted nothing",
			replay.Report{Counters: crashes(0, 2, 0), Target: &replay.Target{Given: []string{"cap.ndjson"}, Table: "payments"}},
			"replay of cap.ndjson into the target",
			"2 deliveries (2 acked, 0 conflicts, 0 not acked, 2 crashes after the answer), 1 effect row in payments; all 2 crashes came after the answer: none interrupted a delivery"},
		{"a replay whose crash interrupted one, into an effects query",
			replay.Report{Counters: crashes(1, 0, 0), Target: &replay.Target{Given: []string{"a.ndjson", "b.ndjson"}}},
			"replay of 2 capture(s) into the target",
			"1 delivery (0 acked, 0 conflicts, 1 not acked, 1 crash before the answer), 1 effect row from the effects query"},
		{"a broker replay",
			replay.Report{Counters: func() consumer.Counters { c := crashes(0, 0, 2); c.Published = 2; return c }(), Target: &replay.Target{Given: []string{"-"}, Table: "payments", Broker: true}},
			"replay of - into the target",
			"2 published, 2 instance kills, 0 redelivered by the broker, 1 effect row in payments"},
		{"a broker that does not count redeliveries",
			replay.Report{Counters: consumer.Counters{Published: 3, Uncounted: true}, Target: &replay.Target{Given: []string{"c"}, Table: "t", Broker: true}},
			"replay of c into the target",
			"3 published, 0 instance kills, redeliveries not counted by the broker, 0 effect rows in t"},
		{"a RabbitMQ drain whose stop put messages back",
			replay.Report{Counters: consumer.Counters{Published: 5, Uncounted: true, Effects: 5}, Target: &replay.Target{Given: []string{"c"}, Table: "payments", Broker: true, HeldBack: &replay.HeldBack{Restarts: 1, Messages: 5}}},
			"replay of c into the target",
			"5 published, 0 instance kills, redeliveries not counted by the broker, 5 effect rows in payments; the instances, stopped once the queue stood empty, still held 5 messages unacknowledged; started again once to take them"},
		{"a RabbitMQ drain whose stop killed instances that ignored SIGTERM",
			replay.Report{Counters: consumer.Counters{Published: 5, Uncounted: true, Effects: 5}, Target: &replay.Target{Given: []string{"c"}, Table: "payments", Broker: true, HeldBack: &replay.HeldBack{KilledAtStop: 3}}},
			"replay of c into the target",
			"5 published, 0 instance kills, redeliveries not counted by the broker, 5 effect rows in payments; the instances, stopped once the queue stood empty, held nothing unacknowledged; 3 times an instance did not end within 5s of its SIGTERM, and the stop ended it with SIGKILL"},
		{"kills, bad records and invariants caught",
			replay.Report{Counters: crashes(2, 0, 0), Capture: replay.CaptureReport{BadRecords: 1},
				Violations: []replay.Violation{{Invariant: "duplicate-effect"}, {Invariant: "lost-effect"}},
				Target: &replay.Target{Given: []string{"c"}, Table: "t",
					Kills:   &replay.Kills{Count: 2, Asked: 2 * time.Second, Every: 8104 * time.Millisecond, Restart: 6099 * time.Millisecond},
					Working: &replay.WorkingKills{Probability: 0.5, Drawn: 3, Killed: 2, Interrupted: 1, Missed: 1}}},
			"replay of c into the target",
			"2 deliveries (0 acked, 0 conflicts, 2 not acked, 2 crashes before the answer), 1 effect row in t; " +
				"one kill every 8.1s on average (asked every 2s, counted from when the previous restart was ready; restarts took 6.1s on average); " +
				"--kill-working 0.5: 3 deliveries drawn, 2 instance kills at their statements, 1 of them interrupting a delivery (1 after its transaction ended); 1 drawn delivery ended before the boundary drawn (not killed); " +
				"1 bad record skipped (--max-bad); caught duplicate-effect, lost-effect"},
		{"a replay that stopped first",
			replay.Report{Counters: crashes(1, 0, 0), Target: &replay.Target{File: "t.yaml"}}, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := replayName(&tt.rep); got != tt.wantName {
				t.Errorf("name: got  %q\nwant %q", got, tt.wantName)
			}
			if got := replayLine(&tt.rep); got != tt.wantLine {
				t.Errorf("line: got  %q\nwant %q", got, tt.wantLine)
			}
		})
	}
}

// TestTargetCounterLine: -v's counters line of a target's check adds
// what the broker did, and what stopping the instances at a settle put
// back, only where something was.
func TestTargetCounterLine(t *testing.T) {
	const plain = "counters (target): 3 deliveries, 0 redeliveries, 3 acked, 0 conflicts, 0 rejected or unacked, 0 crashes, 3 effect rows"
	for _, tt := range []struct {
		name string
		c    consumer.Counters
		want string
	}{
		{"no broker", consumer.Counters{Deliveries: 3, Processed: 3, Effects: 3}, plain},
		{"JetStream", consumer.Counters{Deliveries: 3, Processed: 3, Effects: 3, Published: 3, BrokerRedelivered: 1},
			plain + "; broker: 3 published, 1 redelivered by the broker"},
		{"RabbitMQ, nothing held", consumer.Counters{Deliveries: 3, Processed: 3, Effects: 3, Published: 3, Uncounted: true},
			plain + "; broker: 3 published, redeliveries not counted by the broker"},
		{"RabbitMQ, stops that put messages back", consumer.Counters{Deliveries: 3, Processed: 3, Effects: 3, Published: 3, Uncounted: true, HeldBack: 4, HeldBackRestarts: 2},
			plain + "; broker: 3 published, redeliveries not counted by the broker; the instances, stopped once the queue stood empty, still held 4 messages unacknowledged; started again 2 times to take them"},
		{"RabbitMQ, instances killed at a stop", consumer.Counters{Deliveries: 3, Processed: 3, Effects: 3, Published: 3, Uncounted: true, KilledAtStop: 1},
			plain + "; broker: 3 published, redeliveries not counted by the broker; the instances, stopped once the queue stood empty, held nothing unacknowledged; an instance did not end within 5s of its SIGTERM, and the stop ended it with SIGKILL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := targetCounterLine(tt.c); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestReplayUnexpectedCheck: the CI formats list the check that no
// delivery failed without an injected fault when the report counts such
// failures, failing it when one did, and leave it out when the report
// does not count them (a replay into a target).
func TestReplayUnexpectedCheck(t *testing.T) {
	for _, tt := range []struct {
		name       string
		unexpected *replay.Unexpected
		want       string // the TAP line of the check; "" for none
	}{
		{"not counted", nil, ""},
		{"none", &replay.Unexpected{}, "ok 1 - failures only where injected"},
		{"one", &replay.Unexpected{Count: 1, Examples: []replay.FailureExample{{Event: "e1", At: replay.Place{File: "c.ndjson", Line: 4}, Error: "boom"}}},
			"not ok 1 - failures only where injected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := &replay.Report{Seed: 1, Inputs: []replay.Input{{File: "c.ndjson", Format: "cloudevents"}}, Unexpected: tt.unexpected, Verdict: invariant.Pass}
			var b strings.Builder
			if err := (&Replay{Report: rep}).Render(&b, FormatTAP, Options{}); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			if tt.want == "" {
				if strings.Contains(got, "failures only where injected") || !strings.Contains(got, "\n1..0\n") {
					t.Errorf("a report that does not count failures apart lists the check:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, "\n1..1\n") || !strings.Contains(got, "\n"+tt.want+"\n") {
				t.Errorf("want %q among:\n%s", tt.want, got)
			}
		})
	}
}
