package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
)

// factsReport is a replay's report holding only what every replay has;
// each case below adds the facts of one part.
func factsReport(add func(*replay.Report)) *Replay {
	rep := &replay.Report{Seed: 1, Inputs: []replay.Input{{File: "c.ndjson", Format: "cloudevents"}},
		Invariants: []replay.InvariantCheck{}, Violations: []replay.Violation{}, Verdict: invariant.Pass}
	if add != nil {
		add(rep)
	}
	return &Replay{Report: rep}
}

// TestReplayDocumentPartsFromFacts: the one JSON document of a replay
// has each optional part exactly when the report holds its facts, for
// whichever consumer filled them: a report holding the facts of both
// kinds has the parts of both.
func TestReplayDocumentPartsFromFacts(t *testing.T) {
	handler := func(r *replay.Report) {
		r.Strategy, r.Store = "event-id", "SQLite in memory"
		r.Strategies = []replay.StrategyRow{}
	}
	target := func(r *replay.Report) {
		r.Target = &replay.Target{File: "t.yaml", Consumer: "exec c", Effects: "table t"}
	}
	for _, tt := range []struct {
		name          string
		add           func(*replay.Report)
		want, notWant []string
	}{
		{"nothing but what every replay has", nil, nil,
			[]string{"target", "strategy", "store", "capture", "outcomes", "crashes", "new_effects", "resumed", "strategies", "unexpected_failures", "fail_on", "failed_on"}},
		{"the built-in handler's store", handler, []string{"strategy", "store", "new_effects", "resumed", "strategies"}, []string{"target"}},
		{"a consumer redeliver reached", target, []string{"target"}, []string{"strategy", "store", "new_effects", "resumed", "strategies"}},
		{"both", func(r *replay.Report) { handler(r); target(r) }, []string{"target", "strategy", "store", "new_effects", "resumed", "strategies"}, nil},
		{"the capture's ids counted", func(r *replay.Report) { r.Capture.Counted = true }, []string{"capture"}, nil},
		{"bad records alone", func(r *replay.Report) { r.Capture.BadRecords = 2 }, nil, []string{"capture"}},
		{"the handler's outcomes", func(r *replay.Report) { r.Outcomes = &replay.Outcomes{Crashed: 1}; r.Counters.Crashed = 1 },
			[]string{"outcomes"}, []string{"crashes"}},
		{"a consumer's answers, one killed", func(r *replay.Report) { r.Counters.Crashed, r.Counters.CrashedBeforeAnswer = 1, 1 },
			[]string{"crashes"}, []string{"outcomes"}},
		{"failures counted apart", func(r *replay.Report) { r.Unexpected = &replay.Unexpected{} }, []string{"unexpected_failures"}, nil},
		{"--fail-on listed, none asked", func(r *replay.Report) { r.FailOn, r.FailedOn = []replay.Finding{}, []replay.Finding{} },
			[]string{"fail_on", "failed_on"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := ReplayJSON(&b, factsReport(tt.add)); err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.want {
				if _, ok := doc[k]; !ok {
					t.Errorf("the document lacks %q:\n%s", k, b.String())
				}
			}
			for _, k := range tt.notWant {
				if _, ok := doc[k]; ok {
					t.Errorf("the document has %q:\n%s", k, b.String())
				}
			}
		})
	}
}

// TestReplayTextSectionsFromFacts: the text report writes each section
// when the report holds its facts, whichever consumer filled them.
func TestReplayTextSectionsFromFacts(t *testing.T) {
	for _, tt := range []struct {
		name          string
		add           func(*replay.Report)
		verbose       bool
		want, notWant []string
	}{
		{"nothing but what every replay has", nil, true,
			[]string{"invariants: all hold\n", "\nPASS: 0 deliveries, 0 effects, no invariant broken (seed 1)\n", "counters (target): "},
			[]string{"replay: ", "target: ", "capture: ", "injected: ", "outcomes: ", "\ncounters: "}},
		{"the handler's strategy and store", func(r *replay.Report) { r.Strategy, r.Store = "none", "SQLite in memory" }, false,
			[]string{"replay: c.ndjson (cloudevents); strategy none on SQLite in memory; seed 1\n"}, []string{"target: "}},
		{"the capture's ids counted", func(r *replay.Report) { r.Capture.Counted, r.Capture.Deliveries = true, 3 }, false,
			[]string{"capture: 3 deliveries, "}, nil},
		{"the handler's outcomes", func(r *replay.Report) { r.Outcomes = &replay.Outcomes{Processed: 2}; r.Counters.Deliveries = 2 }, true,
			[]string{"injected: 0 redelivered", "outcomes: 2 processed", "counters: 2 deliveries, "}, []string{"counters (target): "}},
		{"a consumer redeliver reached, named by its capture", func(r *replay.Report) {
			r.Target = &replay.Target{Consumer: "exec c", Effects: "table t", Given: []string{"c.ndjson"}, Table: "t", Logs: []string{"logs/c-1.log"}}
			r.Counters = consumer.Counters{Deliveries: 1, Processed: 1, Effects: 1}
		}, false,
			[]string{"target: exec c; effects: table t\n", "replay of c.ndjson into the target: 1 delivery (1 acked, ", "consumer output: logs/c-1.log\n", "\nPASS: replay of c.ndjson into the target\n"},
			[]string{"invariants: all hold", "no invariant broken", "counters (target): "}},
		{"both kinds' facts", func(r *replay.Report) {
			r.Strategy, r.Store = "none", "SQLite in memory"
			r.Target = &replay.Target{Consumer: "exec c", Effects: "table t"}
		}, false,
			[]string{"replay: c.ndjson (cloudevents); strategy none on SQLite in memory; seed 1\ntarget: exec c; effects: table t\n"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := ReplayText(&b, factsReport(tt.add).Report, Options{Verbose: tt.verbose}); err != nil {
				t.Fatal(err)
			}
			got := "\n" + b.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the report lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("the report has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestReplayRanByFromFacts: the CI formats name what took a replay's
// deliveries from the facts its report holds — the handler's strategy
// and store, the consumer redeliver reached and its effects, or both —
// in the TAP header, the JUnit properties and the step summary.
func TestReplayRanByFromFacts(t *testing.T) {
	handler := func(r *replay.Report) {
		r.Strategy, r.Store, r.Outcomes = "none", "SQLite file r.db", &replay.Outcomes{Processed: 1}
		r.Counters.Deliveries, r.Effects = 1, 1
	}
	target := func(r *replay.Report) {
		r.Target = &replay.Target{Consumer: "exec c", Effects: "table t", Given: []string{"c.ndjson"}, Table: "t"}
	}
	for _, tt := range []struct {
		name        string
		add         func(*replay.Report)
		tap, figure string
		props       string
	}{
		{"the handler", handler, "# replay: c.ndjson (cloudevents); strategy none on SQLite file r.db; seed 1",
			"strategy none on SQLite file r.db, seed 1: 1 delivery, 1 processed, 0 duplicate, 0 conflict, 0 failed, 0 crashed, 1 effect",
			"format strategy=none store=sqlite-file seed=1"},
		{"a target", target, "# replay: c.ndjson (cloudevents); target exec c; effects table t; seed 1",
			"target exec c, effects table t, seed 1: 0 deliveries (0 acked, 0 conflicts, 0 not acked, 0 crashes), 0 effect rows in t",
			"format store=target seed=1 target=exec c effects=table t"},
		{"both", func(r *replay.Report) { handler(r); target(r) },
			"# replay: c.ndjson (cloudevents); strategy none on SQLite file r.db; target exec c; effects table t; seed 1",
			"strategy none on SQLite file r.db, target exec c, effects table t, seed 1: 1 delivery (0 acked, 0 conflicts, 0 not acked, 0 crashes), 0 effect rows in t; 1 delivery, 1 processed, 0 duplicate, 0 conflict, 0 failed, 0 crashed, 1 effect",
			"format strategy=none store=sqlite-file seed=1 target=exec c effects=table t"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := factsReport(tt.add)
			var b strings.Builder
			if err := ReplayTAP(&b, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "\n"+tt.tap+"\n") {
				t.Errorf("TAP header: want %q in\n%s", tt.tap, b.String())
			}
			if got := replayFigures(r.Report); got != tt.figure {
				t.Errorf("summary figures:\ngot  %q\nwant %q", got, tt.figure)
			}
			props := []string{"format"}
			for _, p := range ranProps(r.Report) {
				props = append(props, p.Name+"="+p.Value)
			}
			if got := strings.Join(props, " "); got != tt.props {
				t.Errorf("JUnit properties:\ngot  %q\nwant %q", got, tt.props)
			}
		})
	}
}
