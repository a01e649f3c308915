package report

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
)

// chargedTwice is a check of a user's consumer charged twice at a
// payment provider: its first delivery's charge was made and its answer
// lost, the delivery failed, and the redelivery charged again, with no
// idempotency key either time; a third call was refused. Beside them,
// calls the check's timeline must not draw where they came: one made in
// the check before, one while a delivery it does not draw was in flight
// (another schedule's), a mail sent between its deliveries with none in
// flight, and a mail sent after its last answer.
func chargedTwice() runner.CheckResult {
	hist := []invariant.Record{
		{Seq: 1, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Failed, Said: "500 Internal Server Error"}, Step: 1, Span: invariant.Span{Sent: at(0), Answered: at(1000)}},
		{Seq: 2, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked, Said: "200 OK"}, Step: 1, Span: invariant.Span{Sent: at(3000), Answered: at(4000)}},
	}
	charge := func(seq, us int, by string, performed bool, answer string) invariant.Call {
		return invariant.Call{External: "payments", Seq: seq, What: "POST /v1/<script>", Delivery: by, Key: "O-1", Keyed: true, Header: "Idempotency-Key",
			Performed: performed, At: at(us), Answer: answer, NoAnswer: answer == "no answer"}
	}
	mail := func(seq, us int) invariant.Call {
		return invariant.Call{External: "mail", Seq: seq, What: "mail to customer-O-1@example.com", Key: "customer-O-1@example.com|Order O-1 paid", Performed: true, At: at(us), Answer: "accepted"}
	}
	calls := []invariant.Call{
		charge(1, -500, "evt-0", true, "201 (ch_1)"),
		charge(2, 200, "evt-1", true, "no answer"),
		charge(3, 2000, "evt-1", true, "201 (ch_9)"),
		charge(4, 3200, "evt-1", true, "201 (ch_3)"),
		charge(5, 3500, "evt-1", false, "409"),
		mail(1, 1500),
		mail(2, 9000),
	}
	vs := []invariant.Violation{
		{Invariant: invariant.ExternalDuplicate.Name, EventID: "evt-1", External: "payments", Detail: "payments performed 2 effects for key O-1: call 2 (POST /v1/<script>, by evt-1), call 4 (POST /v1/<script>, by evt-1)", Calls: []int{2, 4}, Call: 4},
		{Invariant: invariant.UnkeyedExternalCall.Name, EventID: "evt-1", External: "payments", Detail: "call 2 (POST /v1/<script>, by evt-1), call 4 (POST /v1/<script>, by evt-1), call 5 (POST /v1/<script>, by evt-1) to payments carried no Idempotency-Key header (key O-1)", Calls: []int{2, 4, 5}, Call: 2},
	}
	return runner.CheckResult{Name: "charged twice", Pos: consumer.Location{File: "externals.yaml", Line: 3, Col: 5}, History: hist, Violations: vs, Calls: calls}
}

// drawnCall is a call's mark as the page draws it.
type drawnCall struct {
	External, Kind, Broke, Label, Title string
	Seq                                 int
	Left                                float64
}

var (
	callLaneRe = regexp.MustCompile(`(?s)<div class="lane external" data-lane="external" data-external="([^"]*)"><div class="lane-name">↗ ([^<]*)</div><div class="track">\n(.*?)</div></div>\n`)
	callRe     = regexp.MustCompile(`<div class="call c-(\w+)(?: broken)?" id="[^"]*" data-seq="(\d+)" data-kind="(\w+)"(?: data-broke="([^"]*)")? style="left:min\(([0-9.]+)%, calc\(100% - 20px\)\)" title="([^"]*)"><b>[^<]*</b><span class="label">(.*?)</span></div>\n`)
)

// drawnCalls are the marks of the calls on a page, lane by lane.
func drawnCalls(t *testing.T, page string) []drawnCall {
	t.Helper()
	var out []drawnCall
	for _, lane := range callLaneRe.FindAllStringSubmatch(page, -1) {
		if lane[1] != lane[2] {
			t.Errorf("the lane of %q is named %q", lane[1], lane[2])
		}
		marks := callRe.FindAllStringSubmatch(lane[3], -1)
		if n := strings.Count(lane[3], `<div class="call `); n != len(marks) {
			t.Errorf("%q's lane has %d marks, %d of them as the test reads them:\n%s", lane[1], n, len(marks), lane[3])
		}
		for _, m := range marks {
			seq, _ := strconv.Atoi(m[2])
			left, _ := strconv.ParseFloat(m[5], 64)
			if m[1] != m[3] {
				t.Errorf("call %s at %s is drawn as %s and said to be %s", m[2], lane[1], m[1], m[3])
			}
			out = append(out, drawnCall{External: lane[1], Kind: m[3], Broke: m[4], Seq: seq, Left: left, Title: m[6], Label: m[7]})
		}
	}
	return out
}

// barLeft is where a bar starts, in percent.
func barLeft(t *testing.T, page, id string) float64 {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `" data-seq="\d+" style="left:([0-9.]+)%`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no bar %s on the page", id)
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	return f
}

// TestHTMLCalls: the calls a check made to the stand-ins of its
// externals are on its timeline, a lane per external, a mark per call
// where it came: under the delivery in flight, the calls the judge named
// drawn broken, what came from input escaped; the calls of other checks
// and schedules left out, and what came after the last answer at the
// end. A timeline with no times draws no call, and a timeline draws a
// bounded number of calls, saying how many it left out.
func TestHTMLCalls(t *testing.T) {
	type wantCall struct {
		external string
		seq      int
		kind     string
		broke    string
		// after and before are the bars (d1, d2) between whose left
		// edges the mark is; before "" is the timeline's end, after
		// "end" the end itself.
		after, before string
	}
	untimed := chargedTwice()
	untimed.History = []invariant.Record{untimed.History[0], untimed.History[1]}
	for i := range untimed.History {
		untimed.History[i].Span = invariant.Span{}
	}
	many := chargedTwice()
	many.Violations = nil
	many.Calls = nil
	// A call to each of ten externals, then 490 more to the first.
	for i := 1; i <= 500; i++ {
		ext := "ext-1"
		if i <= htmlMaxExternals+2 {
			ext = "ext-" + strconv.Itoa(i)
		}
		many.Calls = append(many.Calls, invariant.Call{External: ext, Seq: i, What: "POST /", Delivery: "evt-1", Performed: true, At: at(3000 + i), Answer: "201"})
	}
	tests := []struct {
		name  string
		check runner.CheckResult
		calls []wantCall // nil: no call is drawn
		n     int        // with calls nil, how many marks
		want  []string
		not   []string
	}{
		{name: "charged twice", check: chargedTwice(), calls: []wantCall{
			{"payments", 2, "performed", "external-duplicate unkeyed-external-call", "d1", "d2"},
			{"payments", 4, "performed", "external-duplicate unkeyed-external-call", "d2", ""},
			{"payments", 5, "answered", "unkeyed-external-call", "d2", ""},
			{"mail", 1, "performed", "", "d1", "d2"},
			{"mail", 2, "performed", "", "end", ""},
		}, want: []string{
			// The path that came from the consumer is text, in the label
			// and the tooltip.
			`<span class="label">POST /v1/&lt;script&gt; → 201 (ch_3) <span class="badge">⚠ external-duplicate</span> <span class="badge">⚠ unkeyed-external-call</span></span>`,
			`title="call 2 at payments: POST /v1/&lt;script&gt;, no Idempotency-Key header; effect key O-1; during the delivery of evt-1; at &#43;200 µs; no answer was sent; performed an effect; broke external-duplicate; broke unkeyed-external-call"`,
			`<span class="label">POST /v1/&lt;script&gt; → no answer `,
			"at &#43;9.00 ms, after the check&#39;s last answer (drawn at its end)",
			// The breaches point at the calls that made them.
			`data-bar="f1-c1-e1-4">⚠ invariant external-duplicate broken`, `(call 4 at payments)</a>`,
			`data-bar="f1-c1-e1-2">⚠ invariant unkeyed-external-call broken`, `(call 2 at payments)</a>`,
			`<span class="key c-performed"><b>●</b> performed an effect</span>`, `<span class="key c-answered"><b>○</b>`,
		}, not: []string{"/v1/<script>", `data-kind="cut"`, "not drawn"}},
		{name: "untimed", check: untimed, not: []string{`class="lane external"`, `class="call `, "Calls to externals"}},
		{name: "many calls", check: many, n: htmlMaxCalls, want: []string{
			"and 98 calls to externals after these, not drawn: a timeline draws at most 400 calls; 2 calls to further externals, not drawn: a timeline draws the calls of at most 8 externals",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := string(render(t, &Run{Command: "run", Files: []*runner.FileResult{{File: "externals.yaml", Target: "http://127.0.0.1:8937/events", Checks: []runner.CheckResult{tt.check}}}}))
			got := drawnCalls(t, page)
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("the page does not say %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(page, n) {
					t.Errorf("the page says %q", n)
				}
			}
			if tt.calls == nil {
				if len(got) != tt.n {
					t.Errorf("the page draws %d calls, want %d", len(got), tt.n)
				}
				if lanes := len(callLaneRe.FindAllString(page, -1)); tt.n > 0 && lanes != htmlMaxExternals {
					t.Errorf("the page draws %d lanes of externals, want %d", lanes, htmlMaxExternals)
				}
				return
			}
			var gotRefs, wantRefs []string
			for _, c := range got {
				gotRefs = append(gotRefs, fmt.Sprintf("%s %d", c.External, c.Seq))
			}
			for _, w := range tt.calls {
				wantRefs = append(wantRefs, fmt.Sprintf("%s %d", w.external, w.seq))
			}
			sort.Strings(gotRefs)
			sort.Strings(wantRefs)
			if strings.Join(gotRefs, ", ") != strings.Join(wantRefs, ", ") {
				t.Fatalf("the page draws the calls %v, want %v", gotRefs, wantRefs)
			}
			for _, w := range tt.calls {
				var c drawnCall
				for _, g := range got {
					if g.External == w.external && g.Seq == w.seq {
						c = g
					}
				}
				if c.Kind != w.kind || c.Broke != w.broke {
					t.Errorf("call %d at %s is drawn %s, broke %q; want %s, broke %q", w.seq, w.external, c.Kind, c.Broke, w.kind, w.broke)
				}
				from, to := 100.0, 100.0
				if w.after != "end" {
					from = barLeft(t, page, "f1-c1-"+w.after)
				}
				if w.before != "" {
					to = barLeft(t, page, "f1-c1-"+w.before)
				}
				if c.Left < from || c.Left > to || (c.Left == to && w.before != "") {
					t.Errorf("call %d at %s is at %v%%, want from %v%% (%s) to %v%% (%s)", w.seq, w.external, c.Left, from, w.after, to, w.before)
				}
			}
		})
	}
}
