package report

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

var update = flag.Bool("update", false, "write the HTML goldens")

// t0 is the fixtures' clock: no golden holds a time of the day it was
// written.
var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(us int) time.Time { return t0.Add(time.Duration(us) * time.Microsecond) }

// hostile are ids a capture or a scenario may carry: markup, quotes,
// control characters and a bidi override.
var hostile = []string{
	`<script>alert("owned")</script>`,
	`"quoted" & 'single' <b>bold</b>`,
	"x\n::error::owned",
	"z\x1b]0;pwned\a\x1b[2J",
	"b\u202eidi",
}

// raceRun is a failing race of two workers (the second one's delivery
// broke duplicate-effect) beside a passing check of repeats and a user's
// consumer's crashed delivery of a hostile id, with its calls to a
// payment provider.
func raceRun() *Run {
	by := invariant.Record{Seq: 3, EventID: "evt-1", Consumer: "default", Result: consumer.Result{Outcome: consumer.Processed, EffectID: 2},
		Check: 2, Step: 1, Pos: consumer.Location{File: "race.yaml", Line: 14, Col: 9},
		Span: invariant.Span{Sent: at(100), Answered: at(900), Lane: 2, HeldAt: consumer.AfterCheck, Held: at(200), Released: at(700)}}
	v := invariant.Violation{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1", Consumer: "default", Detail: "event evt-1 has 2 rows in shipments (ids 1, 2) for consumer default", By: &by}
	race := runner.CheckResult{Name: "two workers at once", Pos: consumer.Location{File: "race.yaml", Line: 11, Col: 5}, Line: said("2 deliveries: 2 processed, caught duplicate-effect"),
		Held: []consumer.FaultPoint{consumer.AfterCheck}, Schedules: 3,
		Counters: consumer.Counters{Deliveries: 2, Processed: 2, Effects: 2},
		History: []invariant.Record{
			{Seq: 2, EventID: "evt-1", Consumer: "default", Result: consumer.Result{Outcome: consumer.Processed, EffectID: 1}, Check: 2, Step: 1, Pos: by.Pos,
				Span: invariant.Span{Sent: at(120), Answered: at(650), Lane: 1, HeldAt: consumer.AfterCheck, Held: at(180), Released: at(600)}},
			by,
		},
		Violations: []invariant.Violation{v},
	}
	runner.Verdict(&race, &scenario.Check{Pos: race.Pos})
	race.Failures[0].Message = "explored under 3 schedules, 2 failed; the first failing one, 2 of 3 (workers held at after-check): " + race.Failures[0].Message
	repeats := runner.CheckResult{Name: "redelivered five times", Pos: consumer.Location{File: "race.yaml", Line: 5, Col: 5}, Passed: true, Line: said("5 deliveries: 1 processed, 4 duplicates"),
		Counters: consumer.Counters{Deliveries: 5, Processed: 1, Duplicates: 4},
		History: []invariant.Record{
			{Seq: 1, EventID: "evt-0", Result: consumer.Result{Outcome: consumer.Processed}, Check: 1, Step: 1, Span: invariant.Span{Sent: at(0), Answered: at(40)}},
			{Seq: 2, EventID: "evt-0", Result: consumer.Result{Outcome: consumer.Duplicate}, Check: 1, Step: 1, Repeats: 3, Span: invariant.Span{Sent: at(50), Answered: at(90)}},
		}}
	crash := runner.CheckResult{Name: hostile[0], Pos: consumer.Location{File: "target.yaml", Line: 7, Col: 5}, Line: said(hostile[1]),
		Counters: consumer.Counters{Deliveries: 2, Crashed: 1, BrokerRedelivered: 1},
		History: []invariant.Record{
			{Seq: 1, EventID: hostile[2], Key: hostile[1], Result: consumer.Result{Outcome: consumer.Unacked, Said: "no answer: killed"}, Step: 1, Pos: consumer.Location{File: "target.yaml", Line: 9, Col: 9},
				Span: invariant.Span{Sent: at(0), Answered: at(3000), Crash: "before-answer", Killed: at(1000), Restarted: at(2900)}},
			{Seq: 2, EventID: hostile[2], Key: hostile[1], Result: consumer.Result{Outcome: consumer.Acked, Status: 200, Said: "200 OK"}, Step: 1, Pos: consumer.Location{File: "target.yaml", Line: 9, Col: 9},
				Span: invariant.Span{Sent: at(3500), Answered: at(4000)}},
		}}
	crash.Trace = []consumer.Statement{
		{Worker: 1, Text: "SELECT 1 FROM processed WHERE id = '" + hostile[0] + "'", Answer: "SELECT 0"},
		{Worker: 2, Text: "SELECT 1 FROM processed WHERE id = $1", Answer: "SELECT 0", Held: true, Released: true, Extended: true, Name: "stmtcache_1", Sync: 1},
		{Worker: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1", Extended: true, Sync: 2},
		{Worker: 1, Text: "COMMIT", Held: true, Before: true},
	}
	// The charge the killed delivery made was cut before it was
	// performed; the redelivery's was performed.
	crash.Calls = []invariant.Call{
		{External: "payments", Seq: 1, What: "POST /v1/" + hostile[0], Delivery: hostile[2], Key: hostile[1], IdemKey: hostile[3], Keyed: true, Header: "Idempotency-Key",
			At: at(500), Answer: "no answer", NoAnswer: true},
		{External: "payments", Seq: 2, What: "POST /v1/" + hostile[0], Delivery: hostile[2], Key: hostile[1], IdemKey: hostile[3], Keyed: true, Header: "Idempotency-Key",
			Performed: true, At: at(3600), Answer: "201 (ch_1)"},
	}
	crash.Failures = []runner.Failure{{Step: 1, Pos: consumer.Location{File: "target.yaml", Line: 9, Col: 9}, Message: "step 1: expected acked, got " + hostile[3]}}
	return &Run{Command: "run", Seed: 7, Files: []*runner.FileResult{
		{File: "race.yaml", Name: "a race check-then-act loses", Strategy: handler.CheckThenAct, Checks: []runner.CheckResult{repeats, race},
			Counters: consumer.Counters{Deliveries: 7, Processed: 3, Duplicates: 4, Effects: 3}},
		{File: hostile[4] + ".yaml", Name: hostile[0], Target: "http://127.0.0.1:8080/" + hostile[0], Effects: "table payments (key order_id) in postgres", Strategy: "target",
			Checks: []runner.CheckResult{crash}, Counters: crash.Counters},
	}}
}

// replayReport is a built-in replay of a million deliveries that broke
// duplicate-effect on hostile ids, with the strategy table.
func replayReport() *Replay {
	r := &replay.Report{Seed: 3, Strategy: handler.CheckThenAct, Store: "SQLite in memory",
		Outcomes: &replay.Outcomes{Processed: 990_000, Duplicate: 9_000, Conflict: 500, Failed: 400, Crashed: 100},
		Counters: consumer.Counters{Deliveries: 1_000_000, Redeliveries: 10_000},
		Injected: replay.Injected{Redelivered: 9_000, Crashed: 100},
		Effects:  990_100,
		Invariants: []replay.InvariantCheck{
			{Name: "duplicate-effect", Description: "an event was applied more than once", Broken: 42},
			{Name: "lost-effect", Description: "a processed event left no effect"},
		},
		Violations: []replay.Violation{{Invariant: "duplicate-effect", Count: 42, Examples: []replay.Example{
			{Event: hostile[0], Detail: "event " + hostile[0] + " has 2 rows in effects"},
			{Event: hostile[2], Detail: "event " + hostile[2] + " has 2 rows in effects"},
		}}},
		Strategies: []replay.StrategyRow{
			{Strategy: handler.CheckThenAct, Effects: 990_100, Keys: 990_000, MostPerKey: 2, Broken: []string{"duplicate-effect"}},
			{Strategy: handler.EventID, Effects: 990_000, Keys: 990_000, MostPerKey: 1, Safe: true},
		},
		Verdict: invariant.Fail,
	}
	// Its totals over the capture: a duplicate in every hundred and
	// eleven, the rarer outcomes spread evenly, a crash with each failure.
	for at := int64(0); at < 1_000_000; at++ {
		switch {
		case at%1000 < 9:
			r.Over.Add(at, 1, false)
		case at%2000 == 9:
			r.Over.Add(at, 2, false)
		case at%2500 == 10:
			r.Over.Add(at, 3, true)
		case at%10000 == 11:
			r.Over.Add(at, 4, true)
		default:
			r.Over.Add(at, 0, false)
		}
	}
	return &Replay{Report: r, Duration: 3 * time.Second}
}

// targetReplay is a replay into a target that broke duplicate-key on
// twelve keys, a hostile one first: each key's two deliveries on two of
// the replay's workers.
func targetReplay() *Replay {
	var hist []invariant.Record
	var vs []invariant.Violation
	rep := &replay.Report{Seed: 9, Inputs: []replay.Input{{File: "orders.ndjson", Format: "cloudevents"}},
		Counters:   consumer.Counters{Deliveries: 24, Processed: 24},
		Timelines:  true,
		Target:     &replay.Target{File: "target.yaml", Consumer: "http://127.0.0.1:8080/events", Effects: "table payments (key order_id) in postgres", Given: []string{"orders.ndjson"}, Table: "payments"},
		Invariants: []replay.InvariantCheck{{Name: "duplicate-key", Description: "one business key got more than one effect row", Broken: 12}},
		Verdict:    invariant.Fail,
	}
	rv := replay.Violation{Invariant: "duplicate-key", Count: 12}
	for k := 0; k < 12; k++ {
		key := "order-" + strconv.Itoa(k)
		if k == 0 {
			key = hostile[0]
		}
		for n := 0; n < 2; n++ {
			seq := 2*k + n + 1
			rep.Over.Add(int64(seq/10), 0, false)
			hist = append(hist, invariant.Record{Seq: seq, EventID: "evt-" + strconv.Itoa(seq), Key: key, Result: consumer.Result{Outcome: consumer.Acked, Said: "200 OK"},
				Pos: consumer.Location{File: "orders.ndjson", Line: seq}, Span: invariant.Span{Sent: at(seq * 100), Answered: at(seq*100 + 150), Lane: n + 1}})
		}
		detail := "business key " + key + " has 2 effect rows in payments"
		by := hist[len(hist)-1]
		vs = append(vs, invariant.Violation{Invariant: invariant.DuplicateKey.Name, EventID: by.EventID, Detail: detail, By: &by})
		rv.Examples = append(rv.Examples, replay.Example{Event: by.EventID, Key: key, Detail: detail, At: []replay.Place{replay.Place(by.Pos)}})
	}
	rep.Violations = []replay.Violation{rv}
	rep.Breaches, rep.History = vs, hist
	return &Replay{Report: rep}
}

func render(t *testing.T, res Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := res.Render(&b, FormatHTML, Options{}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHTMLGolden: the pages of a run and of a replay, byte for byte.
func TestHTMLGolden(t *testing.T) {
	tests := []struct {
		golden string
		res    Result
	}{
		{"run.html", raceRun()},
		{"replay.html", replayReport()},
		{"target-replay.html", targetReplay()},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := render(t, tt.res)
			path := filepath.Join("testdata", "html", tt.golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/report -run TestHTMLGolden -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the page rendered now (go test ./pkg/report -run TestHTMLGolden -update writes it)", path)
			}
		})
	}
}

// TestHTMLEscapes: what came from input is text on the page — no tag,
// attribute or script of its own, no control character.
func TestHTMLEscapes(t *testing.T) {
	for name, res := range map[string]Result{"run": raceRun(), "replay": replayReport(), "target replay": targetReplay()} {
		t.Run(name, func(t *testing.T) {
			page := string(render(t, res))
			for _, bad := range []string{"<script>alert", "<b>bold", "\x1b", "\u202e", "\a", "\n::error::"} {
				if strings.Contains(page, bad) {
					t.Errorf("the page holds %q raw", bad)
				}
			}
			if n := strings.Count(page, "<script"); n != 1 {
				t.Errorf("the page has %d script elements, want its own one", n)
			}
			if !strings.Contains(page, "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;") {
				t.Errorf("the id with markup is not on the page as text")
			}
		})
	}
}

// TestHTMLSelfContained: the page loads nothing: no URL but the page's
// own anchors in any src or href, and a policy that forbids any.
func TestHTMLSelfContained(t *testing.T) {
	page := string(render(t, raceRun()))
	for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("the page refers to %q", m[1])
		}
	}
	if !strings.Contains(page, `content="default-src &#39;none&#39;;`) {
		t.Errorf("the page has no policy that forbids loading anything")
	}
}

// TestHTMLLanesAndBreaches: each worker has its lane; the delivery that
// broke an invariant is marked on its own lane, with the text report's
// sentence; a crash is marked.
func TestHTMLLanesAndBreaches(t *testing.T) {
	page := string(render(t, raceRun()))
	lane2 := regexp.MustCompile(`(?s)<div class="lane" data-lane="2">.*?</div></div>`).FindString(page)
	if !strings.Contains(lane2, `class="bar o-processed broken"`) || !strings.Contains(lane2, `data-broke="duplicate-effect"`) {
		t.Errorf("worker 2's lane does not mark its delivery as the one that broke duplicate-effect:\n%s", lane2)
	}
	lane1 := regexp.MustCompile(`(?s)<div class="lane" data-lane="1">.*?</div></div>`).FindString(page)
	if lane1 == "" || strings.Contains(lane1, "broken") {
		t.Errorf("worker 1's lane is missing or marked broken:\n%s", lane1)
	}
	sentence := "invariant duplicate-effect broken: event evt-1 has 2 rows in shipments (ids 1, 2) for consumer default, by step 1"
	if !strings.Contains(page, sentence) {
		t.Errorf("the page does not say %q", sentence)
	}
	for _, want := range []string{"delivery #3 on worker 2", "‖ held at after-check for 500 µs", "↯ killed (before-answer)", "#2 duplicate ×4", "the broker redelivered 1 message",
		"<th>connection 1</th><th>connection 2</th>",
		"⟳ restarted, ready again at &#43;2.90 ms, 1.90 ms after the kill", "↻ the broker redelivered 1 message while the check drained", "4. COMMIT ✂ killed here, before it reached the database", "SELECT 1 FROM processed WHERE id = &#39;&lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestHTMLStaysSmall: a check of many deliveries draws a bounded number
// of bars and says how many it left out; a replay of a million
// deliveries is summarised, and says so.
func TestHTMLStaysSmall(t *testing.T) {
	var hist []invariant.Record
	for i := 1; i <= 100_000; i++ {
		hist = append(hist, invariant.Record{Seq: i, EventID: "evt", Result: consumer.Result{Outcome: consumer.Processed},
			Span: invariant.Span{Sent: at(i * 10), Answered: at(i*10 + 5)}})
	}
	run := &Run{Command: "run", Files: []*runner.FileResult{{File: "big.yaml", Checks: []runner.CheckResult{{Name: "big", Passed: true, History: hist}}}}}
	page := string(render(t, run))
	if n := strings.Count(page, `class="bar `); n != htmlMaxBars {
		t.Errorf("the page draws %d bars, want %d", n, htmlMaxBars)
	}
	if !strings.Contains(page, "and 99600 deliveries after these, not drawn") {
		t.Errorf("the page does not say what it left out")
	}
	if len(page) > 1<<20 {
		t.Errorf("the page of 100,000 deliveries is %d bytes", len(page))
	}
	rp := string(render(t, replayReport()))
	if !strings.Contains(rp, "No timeline of its first broken keys is drawn: the built-in replay keeps no record of when or in what order it made each delivery") {
		t.Errorf("the replay's page does not say why it draws no timeline of its broken keys")
	}
	if !strings.Contains(rp, "This page summarises the replay&#39;s 1000000 deliveries") {
		t.Errorf("the replay's page does not say it is a summary")
	}
	if len(rp) > 64<<10 {
		t.Errorf("the page of a million-delivery replay is %d bytes", len(rp))
	}
}

// TestHTMLError: a run the harness could not complete says so, with its
// error.
func TestHTMLError(t *testing.T) {
	run := raceRun()
	run.Errors = append(run.Errors, problemError("race.yaml", errors.New("database is locked")))
	page := string(render(t, run))
	for _, want := range []string{"<title>redeliver run: ERROR</title>", "race.yaml: database is locked", "the run did not complete"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

func problemError(file string, err error) *problem.Error {
	return problem.Environmentf(problem.Pos{File: file}, err)
}

// TestHTMLTargetReplay: a replay into a target draws its first five broken
// keys, each key's deliveries on the lanes of the workers that made them,
// the one that broke the invariant marked; its examples are the first
// five, as the text report's.
func TestHTMLTargetReplay(t *testing.T) {
	page := string(render(t, targetReplay()))
	if n := strings.Count(page, `<article class="check" id="k`); n != htmlBrokenKeys {
		t.Errorf("the page draws %d keys, want %d", n, htmlBrokenKeys)
	}
	if n := strings.Count(page, `class="bar o-acked broken"`); n != htmlBrokenKeys {
		t.Errorf("the page marks %d deliveries broken, want one per key drawn: %d", n, htmlBrokenKeys)
	}
	if n := strings.Count(page, `<div class="example">`); n != replayExamples+1 {
		t.Errorf("the page lists %d examples, want %d and a line for the rest", n, replayExamples+1)
	}
	for _, want := range []string{"<h3>key &lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;</h3>", "and 7 more", "target: http://127.0.0.1:8080/events", "draws no bar per delivery but those of its first 5 broken keys"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestHTMLBrokerName: the drain mark names the broker a target's
// description names.
func TestHTMLBrokerName(t *testing.T) {
	for _, tt := range []struct{ target, want string }{
		{"JetStream nats://127.0.0.1:4222, stream ORDERS, subject orders, durable d (ack)", "JetStream"},
		{"RabbitMQ amqp://127.0.0.1:5672, the default exchange, routing key q, queue q (ack)", "RabbitMQ"},
		{"http://127.0.0.1:8080/events", "the broker"},
		{"JetStreamish", "the broker"},
	} {
		if got := brokerOf(tt.target); got != tt.want {
			t.Errorf("brokerOf(%q) = %q, want %q", tt.target, got, tt.want)
		}
	}
}

// TestHTMLReplayChart: a replay's page draws its totals over its course,
// each series named in words with its sum and its largest step, within a
// few KB for a million deliveries; a replay into a broker target counts
// what the broker redelivered beside its deliveries, and says which of
// its crashes the chart could not place.
func TestHTMLReplayChart(t *testing.T) {
	broker := targetReplay()
	broker.Report.Counters.BrokerRedelivered, broker.Report.Counters.Crashed = 3, 2
	tests := []struct {
		name string
		res  *Replay
		want []string
		not  []string
	}{
		{"built-in", replayReport(), []string{
			">all deliveries: 1000000, at most 16384 a step</text>",
			"✓ processed: 990000, at most", "= duplicate: 9000, at most", "≠ conflict: 500, at most", "✗ failed: 400, at most", "↯ crashed: 100, at most", "↯ crashes: 500, at most",
			"The deliveries over the capture, in 62 steps of 16384 capture deliveries",
			">capture delivery 1</text>", ">capture delivery 1000000</text>",
		}, []string{"redelivered by the broker"}},
		{"target", targetReplay(), []string{"✓ acked: 24, at most", "The deliveries over the time since the replay began, in 3 steps of 1.00 ms"}, []string{"↯ crashes:", "redelivered by the broker", "are not on it"}},
		{"broker target", broker, []string{"<th class=\"beside\"><b>↻</b> redelivered by the broker</th>", "<td class=\"beside\">3</td>",
			"2 crashes of the 2 are not on it: an instance killed on a timer stands for no delivery."}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := string(render(t, tt.res))
			for _, want := range tt.want {
				if !strings.Contains(page, want) {
					t.Errorf("the page does not say %q", want)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(page, not) {
					t.Errorf("the page says %q", not)
				}
			}
			svg := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindString(page)
			if svg == "" || len(svg) > 6<<10 {
				t.Errorf("the chart is %d bytes, want one of at most 6 KB", len(svg))
			}
		})
	}
}

// kafkaRun is a check of a Kafka target: forty publishes in a row, a
// member killed at the seventeenth and ready again 1.2 s later, then the
// seconds the consumer group took to commit them all.
func kafkaRun() *Run {
	var hist []invariant.Record
	for i := 1; i <= 40; i++ {
		r := invariant.Record{Seq: i, EventID: "evt-" + strconv.Itoa(i), Key: "order-" + strconv.Itoa(i), Result: consumer.Result{Outcome: consumer.Acked},
			Step: 1, Span: invariant.Span{Sent: at(i * 800), Answered: at(i*800 + 700)}}
		if i == 17 {
			r.Span.Crash, r.Span.Killed, r.Span.Restarted = "unknown", at(i*800+650), at(i*800+1_200_000)
		}
		hist = append(hist, r)
	}
	c := runner.CheckResult{Name: "orders under kills", Pos: consumer.Location{File: "kafka.yaml", Line: 20, Col: 5}, Passed: true,
		Line: said("40 deliveries: 40 acked, 1 crash at an unknown time"), Counters: consumer.Counters{Deliveries: 40, Processed: 40, Crashed: 1, BrokerRedelivered: 3},
		History: hist, Drains: []runner.Drain{{From: at(40*800 + 700), To: at(4_200_000)}}}
	return &Run{Command: "run", Seed: 5, Files: []*runner.FileResult{{File: "kafka.yaml", Name: "orders through Kafka", Strategy: "target",
		Target: "Kafka 127.0.0.1:9092, topic orders, consumer group shipping (binary)", Effects: "table payments (key order_id) in postgres",
		Checks: []runner.CheckResult{c}, Counters: c.Counters}}}
}

// TestHTMLBrokerWaits: a broker run's timeline runs to the end of the
// wait for its consumer, not only over the publishes: the broker's lane
// has the wait, with its times in words, and it takes its share of the
// timeline.
func TestHTMLBrokerWaits(t *testing.T) {
	page := string(render(t, kafkaRun()))
	wait := regexp.MustCompile(`<div class="wait" style="left:([0-9.]+)%;width:([0-9.]+)%" title="([^"]*)">`).FindStringSubmatch(page)
	if wait == nil {
		t.Fatalf("the broker's lane has no wait for the consumer:\n%s", page)
	}
	if w, _ := strconv.ParseFloat(wait[2], 64); w < 30 {
		t.Errorf("the wait of 4.17 s, after 31.90 ms of publishes, takes %s%% of the timeline", wait[2])
	}
	if want := "↦ the consumer took what was published from &#43;31.90 ms to &#43;4.20 s (4.17 s); the broker redelivered 3 messages while the check drained"; wait[3] != want {
		t.Errorf("the wait says %q, want %q", wait[3], want)
	}
	if !strings.Contains(page, `4.20 s in all`) || !strings.Contains(page, `<span class="tick" style="left:100.000%">&#43;4.20 s</span>`) {
		t.Errorf("the timeline does not run to the end of the wait, +4.20 s")
	}
	if !strings.Contains(page, "Kafka") || strings.Contains(page, `class="drain"`) {
		t.Errorf("the redeliveries are said apart from the wait")
	}
}

// TestHTMLReplayOverTheWholeRun: a replay into a broker target charts
// its whole course, the wait for the consumer after the last publish
// included, and places the kills of --kill-every when they came.
func TestHTMLReplayOverTheWholeRun(t *testing.T) {
	r := targetReplay()
	rep := r.Report
	rep.Over = replay.Over{}
	for ms := int64(0); ms < 35; ms++ {
		rep.Over.Add(ms, 0, false)
	}
	rep.Over.Waited(35, 8000)
	for _, ms := range []int64{1000, 3000, 5000, 7000} {
		rep.Over.Kill(ms)
	}
	rep.Counters.Crashed = 4
	page := string(render(t, r))
	for _, want := range []string{
		"↯ crashes: 4, at most 1 a step",
		"The publishes ended at &#43;35.00 ms; the consumer took what was published until &#43;8.00 s.",
		`<line class="settled"`,
		"&#43;35.00 ms: the last publish; then the wait for the consumer",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the chart does not say %q", want)
		}
	}
	if strings.Contains(page, "not on it") {
		t.Errorf("the chart leaves crashes out")
	}
}

// TestHTMLRaceAtStatements: a race explored at the consumer's statements
// draws the held worker's hold at its boundary, and names the worker of
// each connection.
func TestHTMLRaceAtStatements(t *testing.T) {
	held := invariant.Record{Seq: 2, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(0), Answered: at(900), Lane: 2, HeldAt: "after connection 1's statement 1", Held: at(100), Released: at(600)}}
	other := invariant.Record{Seq: 1, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(10), Answered: at(500), Lane: 1}}
	c := runner.CheckResult{Name: "raced", History: []invariant.Record{other, held}, Schedules: 5,
		Violations: []invariant.Violation{{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1", Detail: "key O-1 has 2 rows in payments", By: &held}},
		Trace: []consumer.Statement{
			{Worker: 1, Lane: 2, Text: "SELECT 1 FROM payments WHERE order_id = $1", Answer: "SELECT 0", Held: true, Released: true},
			{Worker: 2, Lane: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
			{Worker: 1, Lane: 2, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		}}
	page := string(render(t, &Run{Command: "run", Files: []*runner.FileResult{{File: "s.yaml", Target: "POST http://127.0.0.1/events", Checks: []runner.CheckResult{c}}}}))
	for _, want := range []string{
		`<span class="held" style="left:11.111%;width:55.556%" title="held after connection 1&#39;s statement 1 for 500 µs">`,
		"‖ held after connection 1&#39;s statement 1 for 500 µs",
		"<th>connection 1 — worker 2&#39;s</th><th>connection 2 — worker 1&#39;s</th>",
		"(delivery #2 on worker 2)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestHTMLDiagnosis: a target's failing race shows its diagnosis with
// the failure, and the statements it rests on are marked in the
// statements table and on the lanes of the workers that ran them.
func TestHTMLDiagnosis(t *testing.T) {
	held := invariant.Record{Seq: 2, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(0), Answered: at(900), Lane: 2, HeldAt: "after connection 1's statement 1", Held: at(100), Released: at(600)}}
	other := invariant.Record{Seq: 1, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(10), Answered: at(500), Lane: 1}}
	c := runner.CheckResult{Name: "raced", History: []invariant.Record{other, held}, Schedules: 5,
		Failures:   []runner.Failure{{Message: "invariant duplicate-effect broken: key O-1 has 2 rows in payments", Invariant: invariant.DuplicateEffect.Name}},
		Violations: []invariant.Violation{{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1", Detail: "key O-1 has 2 rows in payments", By: &held}},
		Trace: []consumer.Statement{
			{Worker: 1, Lane: 2, Text: "SELECT 1 FROM payments WHERE order_id = $1", Answer: "SELECT 0", Held: true, Released: true},
			{Worker: 1, Lane: 2, Text: "SELECT now()", Answer: "SELECT 1"},
			{Worker: 2, Lane: 1, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
			{Worker: 1, Lane: 2, Text: "INSERT INTO payments VALUES ($1)", Answer: "INSERT 0 1"},
		}}
	file := &runner.FileResult{File: "s.yaml", Target: "POST http://127.0.0.1/events", Dialect: "postgres", EffectTable: "payments", Checks: []runner.CheckResult{c}}
	page := string(render(t, &Run{Command: "run", Files: []*runner.FileResult{file}}))
	for _, want := range []string{
		`<div class="diagnosis" data-pattern="check-then-act"><p class="why">why: check-then-act — worker 1 read payments (0 rows) at statement 1, worker 2 committed at statement 3, worker 1 inserted at statement 4`,
		`<p class="fix">fix: make the marker insert the guard`,
		`<div class="lane evidence" data-lane="1"><div class="lane-name">worker 1 <span class="evidence-mark">◆ statement 3</span>`,
		`<span class="evidence-mark">◆ statements 1, 4</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	if n := strings.Count(page, `evidence">`); n != 3 {
		t.Errorf("%d statements marked as evidence, want 3 (1, 3 and 4)", n)
	}
	if !strings.Contains(page, `<tr class="held-stmt evidence">`) || strings.Contains(page, `<tr class="evidence"><td></td><td>2.`) {
		t.Errorf("the wrong rows are marked:\n%s", page[strings.Index(page, `<table class="statements">`):])
	}
}
