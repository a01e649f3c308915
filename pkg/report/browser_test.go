package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// The HTML report in a real browser: Debian's chromium, headless, driven
// over the DevTools protocol. Without chromium the tests skip, unless CI
// is set: CI installs it (.ci/run), and a skip there would hide a page
// that no longer loads.

// browser opens a page in headless chromium and returns what was said on
// its console: errors, uncaught exceptions, and any request for anything
// but the page itself (the page loads nothing).
type browser struct {
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed, and CI needs it for the HTML report's browser tests (.ci/run installs Debian's chromium)")
		}
		t.Skip("chromium is not installed: the HTML report's browser tests need it (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	err := chromedp.Listen(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.problems = append(b.problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			b.problems = append(b.problems, fmt.Sprintf("exception at %d:%d: %s", d.LineNumber+1, d.ColumnNumber+1, msg))
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError || e.Entry.Level == log.EntryLevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("%s %s: %s", e.Entry.Source, e.Entry.Level, e.Entry.Text))
			}
		case *network.EventRequestWillBeSent:
			if e.Type != network.ResourceTypeDocument {
				b.problems = append(b.problems, "request: "+e.Request.URL)
			}
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, log.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, runtime.Enable, cdp.Empty{})
	}
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

// open writes a page into a file, loads it, waits for its script to have
// run, and fails the test for anything said on the console.
func (b *browser) open(t *testing.T, page []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	// Sleep: let late console messages arrive.
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS("body[data-ready]")), chromedp.Sleep(100*time.Millisecond)); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.problems {
		t.Errorf("the page said on the console: %s", p)
	}
	b.problems = nil
}

// eval evaluates a script on the page and decodes its value.
func eval[T any](t *testing.T, b *browser, js string) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// runScenario runs a scenario file through the built-in handler in
// memory.
func runScenario(t *testing.T, src string) *Run {
	t.Helper()
	s, err := scenario.Load("race.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := builtin.RunFile(context.Background(), s, func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Run{Command: "run", Seed: 1, Files: []*runner.FileResult{fr}}
}

// A lost race, explored: the page loads with nothing said on the console,
// and the broken invariant is on the lane of the worker whose delivery
// broke it, in the text report's words.
func TestBrowserRace(t *testing.T) {
	b := newBrowser(t)
	run := runScenario(t, `version: 1
name: a race check-then-act loses
handler: {strategy: check-then-act, effect: shipments}
checks:
  - name: two workers deliver one event at once
    steps:
      - deliver: {id: evt-1, data: {orderId: order-1}}
        concurrent: 2
`)
	c := run.Files[0].Checks[0]
	if c.Passed || len(c.Violations) == 0 || c.Violations[0].By == nil {
		t.Fatalf("the race did not fail with a delivery to blame: %+v", c)
	}
	v := c.Violations[0]
	var page bytes.Buffer
	if err := HTML(&page, run); err != nil {
		t.Fatal(err)
	}
	b.open(t, page.Bytes())
	type racePage struct {
		Verdict  string
		Lanes    []string
		Broken   []struct{ Lane, Broke, Seq string }
		Breaches []string
		Ready    string
	}
	got := eval[racePage](t, b, `({
		verdict: document.querySelector("h1 .verdict").textContent,
		lanes: Array.from(document.querySelectorAll(".lane")).map(l => l.dataset.lane),
		broken: Array.from(document.querySelectorAll(".bar.broken")).map(b => ({lane: b.closest(".lane").dataset.lane, broke: b.dataset.broke, seq: b.dataset.seq})),
		breaches: Array.from(document.querySelectorAll(".breach")).map(b => b.textContent),
		ready: document.body.dataset.ready,
	})`)
	if got.Verdict != "FAIL" {
		t.Errorf("the page's verdict is %q, want FAIL", got.Verdict)
	}
	if strings.Join(got.Lanes, ",") != "1,2" {
		t.Errorf("the lanes are %v, want one per worker: 1,2", got.Lanes)
	}
	wantLane := fmt.Sprint(v.By.Span.Lane)
	if len(got.Broken) != 1 || got.Broken[0].Lane != wantLane || got.Broken[0].Broke != string(v.Invariant) || got.Broken[0].Seq != fmt.Sprint(v.By.Seq) {
		t.Errorf("the bars marked broken are %+v, want delivery #%d on lane %s, broke %s", got.Broken, v.By.Seq, wantLane, v.Invariant)
	}
	if len(got.Breaches) != 1 || !strings.Contains(got.Breaches[0], escape.Line(v.String())) {
		t.Errorf("the page says %q, want the text report's sentence %q", got.Breaches, v.String())
	}
	if got.Ready != "1" {
		t.Errorf("the page's script saw %q breaches to light up, want 1", got.Ready)
	}
}

// Ids, names and say lines with markup show as text: the page gains no
// element, no script runs but its own, and nothing is fetched.
func TestBrowserHostile(t *testing.T) {
	b := newBrowser(t)
	run := runScenario(t, `version: 1
name: "<img src=x onerror=\"document.title='owned'\">"
handler: {strategy: event-id, effect: shipments}
checks:
  - name: "<script>document.title='owned'</script>"
    steps:
      - deliver: {id: "<b id=owned>\"quoted\" & 'single'</b>", data: {orderId: "</div><img src=y>"}}
        times: 2
    say: "<i>{deliveries}</i>\u202e\e[2J"
`)
	run.Files[0].Checks[0].Failures = nil
	var page bytes.Buffer
	if err := HTML(&page, run); err != nil {
		t.Fatal(err)
	}
	b.open(t, page.Bytes())
	type hostilePage struct {
		Title   string
		Images  int
		Bold    int
		Scripts int
		Text    string
		Tooltip string
	}
	got := eval[hostilePage](t, b, `({
		title: document.title,
		images: document.querySelectorAll("img").length,
		bold: document.querySelectorAll("b#owned").length,
		scripts: document.querySelectorAll("script").length,
		text: document.body.innerText,
		tooltip: document.querySelector(".bar").title,
	})`)
	if got.Title != "redeliver run: PASS" || got.Images != 0 || got.Bold != 0 || got.Scripts != 1 {
		t.Errorf("input became markup: title %q, %d images, %d injected elements, %d scripts", got.Title, got.Images, got.Bold, got.Scripts)
	}
	for _, want := range []string{
		`<img src=x onerror="document.title='owned'">`,
		`<script>document.title='owned'</script>`,
		`<i>2</i>\u202e\x1b[2J`,
	} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	if want := `of <b id=owned>"quoted" & 'single'</b>:`; !strings.Contains(got.Tooltip, want) {
		t.Errorf("the bar's tooltip is %q, want the id as text: %s", got.Tooltip, want)
	}
}

// The built-in replay's page and the pages in testdata load with nothing
// said on the console.
func TestBrowserPagesLoad(t *testing.T) {
	b := newBrowser(t)
	for name, res := range map[string]Result{"run": raceRun(), "replay": replayReport(), "target replay": targetReplay()} {
		t.Run(name, func(t *testing.T) {
			var page bytes.Buffer
			if err := res.Render(&page, FormatHTML, Options{}); err != nil {
				t.Fatal(err)
			}
			b.open(t, page.Bytes())
		})
	}
}

// No label is cut: a bar too narrow for its words has them under the
// bars, where no other label covers them, and a crash's words are always
// there in full.
func TestBrowserLabelsFit(t *testing.T) {
	b := newBrowser(t)
	var page bytes.Buffer
	if err := HTML(&page, kafkaRun()); err != nil {
		t.Fatal(err)
	}
	b.open(t, page.Bytes())
	type label struct {
		Text                     string
		Scroll, Client           float64
		Left, Right, Top, Bottom float64
		TrackLeft, TrackRight    float64
		Marked                   bool
	}
	got := eval[[]label](t, b, `Array.from(document.querySelectorAll(".bar .label")).filter(l => !l.hidden).map(l => {
		const r = l.getBoundingClientRect(), tr = l.closest(".track").getBoundingClientRect(), bar = l.closest(".bar");
		return {text: l.textContent, scroll: l.scrollWidth, client: l.clientWidth, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
			trackLeft: tr.left, trackRight: tr.right, marked: bar.classList.contains("crash") || bar.classList.contains("broken")};
	})`)
	crash := false
	for i, l := range got {
		if l.Scroll > l.Client+1 {
			t.Errorf("the label %q is cut: %v px of its %v px show", l.Text, l.Client, l.Scroll)
		}
		if l.Left < l.TrackLeft-4 || l.Right > l.TrackRight+1 {
			t.Errorf("the label %q runs out of its lane: %v–%v, the lane %v–%v", l.Text, l.Left, l.Right, l.TrackLeft, l.TrackRight)
		}
		for _, m := range got[i+1:] {
			if l.Left < m.Right-0.5 && m.Left < l.Right-0.5 && l.Top < m.Bottom-0.5 && m.Top < l.Bottom-0.5 {
				t.Errorf("the labels %q and %q cover each other", l.Text, m.Text)
			}
		}
		if l.Marked && strings.Contains(l.Text, "↯ killed (unknown)") && strings.Contains(l.Text, "⟳ restarted, ready again at") {
			crash = true
		}
	}
	if !crash {
		t.Errorf("the crash's label is not on the page in full: %+v", got)
	}
	// The wait for the consumer is drawn, as wide as its share.
	wait := eval[float64](t, b, `(() => { const w = document.querySelector("[data-lane=broker] .wait"); return w ? w.getBoundingClientRect().width / w.parentElement.getBoundingClientRect().width : 0; })()`)
	if wait < 0.3 {
		t.Errorf("the wait for the consumer takes %.2f of the broker's lane, want its share of the 4.2 s", wait)
	}
}

// A race explored at the consumer's statements: the hold is drawn on the
// held worker's bar, and the badge is on that worker's lane.
func TestBrowserHeldAtStatement(t *testing.T) {
	b := newBrowser(t)
	held := invariant.Record{Seq: 2, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(0), Answered: at(900), Lane: 2, HeldAt: "after connection 1's statement 1", Held: at(100), Released: at(600)}}
	other := invariant.Record{Seq: 1, EventID: "evt-1", Key: "O-1", Result: consumer.Result{Outcome: consumer.Acked}, Step: 1,
		Span: invariant.Span{Sent: at(10), Answered: at(500), Lane: 1}}
	c := runner.CheckResult{Name: "raced", History: []invariant.Record{other, held},
		Violations: []invariant.Violation{{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1", Detail: "key O-1 has 2 rows in payments", By: &held}}}
	var page bytes.Buffer
	if err := HTML(&page, &Run{Command: "run", Files: []*runner.FileResult{{File: "s.yaml", Target: "POST http://127.0.0.1/events", Checks: []runner.CheckResult{c}}}}); err != nil {
		t.Fatal(err)
	}
	b.open(t, page.Bytes())
	type drawn struct {
		Held       float64
		HeldLane   string
		BrokenLane string
	}
	got := eval[drawn](t, b, `(() => { const h = document.querySelector(".bar .held"), k = document.querySelector(".bar.broken");
		return {held: h ? h.getBoundingClientRect().width : 0, heldLane: h ? h.closest(".lane").dataset.lane : "", brokenLane: k ? k.closest(".lane").dataset.lane : ""}; })()`)
	if got.Held < 100 || got.HeldLane != "2" || got.BrokenLane != "2" {
		t.Errorf("the hold is %v px wide on lane %q, the badge on lane %q; want a hold of more than half the bar on worker 2's lane, and its badge", got.Held, got.HeldLane, got.BrokenLane)
	}
}

// A check charged twice: each call to an external is a mark on its
// external's lane, seen, inside the lane, under the delivery in flight;
// the calls the judge named are framed as a broken bar is, and light up
// with their breach; their labels are whole, in their lane, and cover no
// other label, however close the calls came: those of the broken calls
// always shown, a plain one that finds no room left to its tooltip, as a
// bar's is, and counted on its lane.
func TestBrowserCalls(t *testing.T) {
	b := newBrowser(t)
	c := chargedTwice()
	for i := 3; i <= 6; i++ {
		c.Calls = append(c.Calls, invariant.Call{External: "mail", Seq: i, What: fmt.Sprintf("mail to customer-%d@example.com", i), Key: fmt.Sprintf("customer-%d|paid", i),
			Performed: true, At: at(3600 + 20*i), Answer: "accepted", Delivery: "evt-1"})
	}
	var page bytes.Buffer
	if err := HTML(&page, &Run{Command: "run", Files: []*runner.FileResult{{File: "externals.yaml", Target: "http://127.0.0.1:8937/events", Checks: []runner.CheckResult{c}}}}); err != nil {
		t.Fatal(err)
	}
	b.open(t, page.Bytes())
	type mark struct {
		External, Seq, Broke, Border string
		Left, Right, Top, Bottom     float64
		TrackLeft, TrackRight        float64
		TrackTop, TrackBottom        float64
		Visible                      bool
	}
	marks := eval[[]mark](t, b, `Array.from(document.querySelectorAll(".call")).map(c => {
		const r = c.getBoundingClientRect(), tr = c.closest(".track").getBoundingClientRect(), s = getComputedStyle(c);
		return {external: c.closest(".lane").dataset.external, seq: c.dataset.seq, broke: c.dataset.broke || "", border: s.borderTopStyle,
			left: r.left, right: r.right, top: r.top, bottom: r.bottom, trackLeft: tr.left, trackRight: tr.right, trackTop: tr.top, trackBottom: tr.bottom,
			visible: s.visibility === "visible" && r.width > 10 && r.height > 10 && c.contains(document.elementFromPoint(r.left + 4, r.top + r.height / 2))};
	})`)
	if len(marks) != 9 {
		t.Fatalf("the page draws %d calls, want 9: %+v", len(marks), marks)
	}
	bars := eval[[]float64](t, b, `Array.from(document.querySelectorAll(".bar")).map(b => b.getBoundingClientRect().left)`)
	if len(bars) != 2 {
		t.Fatalf("the page draws %d bars, want 2", len(bars))
	}
	broken := 0
	for _, m := range marks {
		if !m.Visible {
			t.Errorf("call %s at %s is not seen", m.Seq, m.External)
		}
		if m.Left < m.TrackLeft-0.5 || m.Right > m.TrackRight+0.5 || m.Top < m.TrackTop-0.5 || m.Bottom > m.TrackBottom+0.5 {
			t.Errorf("call %s at %s runs out of its lane: %v–%v × %v–%v, the lane %v–%v × %v–%v", m.Seq, m.External, m.Left, m.Right, m.Top, m.Bottom, m.TrackLeft, m.TrackRight, m.TrackTop, m.TrackBottom)
		}
		if m.Broke != "" {
			broken++
			if m.Border != "dashed" {
				t.Errorf("call %s at %s broke %s, and its border is %s, not dashed", m.Seq, m.External, m.Broke, m.Border)
			}
		}
		if m.External == "payments" && m.Seq == "2" && !(m.Left >= bars[0]-0.5 && m.Left < bars[1]) {
			t.Errorf("the first charge is at %v px, not under the first delivery (%v px, the second at %v px)", m.Left, bars[0], bars[1])
		}
		if m.External == "payments" && m.Seq == "4" && m.Left < bars[1]-0.5 {
			t.Errorf("the second charge is at %v px, before the second delivery (%v px)", m.Left, bars[1])
		}
	}
	if broken != 3 {
		t.Errorf("%d calls are drawn broken, want the 3 the judge named", broken)
	}
	type label struct {
		Text                     string
		Scroll, Client           float64
		Left, Right, Top, Bottom float64
		TrackLeft, TrackRight    float64
		Call, Broken             bool
	}
	labels := eval[[]label](t, b, `Array.from(document.querySelectorAll(".bar .label, .wait .label, .call .label")).filter(l => !l.hidden).map(l => {
		const r = l.getBoundingClientRect(), tr = l.closest(".track").getBoundingClientRect();
		return {text: l.textContent, scroll: l.scrollWidth, client: l.clientWidth, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
			trackLeft: tr.left, trackRight: tr.right, call: l.closest(".call") !== null, broken: l.closest(".call.broken") !== null};
	})`)
	calls, brokenLabels := 0, 0
	for i, l := range labels {
		if l.Call {
			calls++
		}
		if l.Broken {
			brokenLabels++
		}
		if l.Scroll > l.Client+1 {
			t.Errorf("the label %q is cut: %v px of its %v px show", l.Text, l.Client, l.Scroll)
		}
		if l.Left < l.TrackLeft-4 || l.Right > l.TrackRight+1 {
			t.Errorf("the label %q runs out of its lane: %v–%v, the lane %v–%v", l.Text, l.Left, l.Right, l.TrackLeft, l.TrackRight)
		}
		for _, m := range labels[i+1:] {
			if l.Left < m.Right-0.5 && m.Left < l.Right-0.5 && l.Top < m.Bottom-0.5 && m.Top < l.Bottom-0.5 {
				t.Errorf("the labels %q and %q cover each other", l.Text, m.Text)
			}
		}
	}
	unlabelled := eval[int](t, b, `Array.from(document.querySelectorAll(".lane.external .track")).reduce((n, tr) => n + Number(tr.dataset.unlabelled || 0), 0)`)
	if brokenLabels != broken || calls+unlabelled != 9 || calls < 6 {
		t.Errorf("%d calls' labels are shown, %d of the broken calls', and %d said not to fit; want the 3 broken calls' and most others', each of the 9 shown or counted", calls, brokenLabels, unlabelled)
	}
	// A breach lights up the call that made it.
	lit := eval[string](t, b, `(() => { const br = document.querySelector(".breach[data-invariant=external-duplicate]");
		br.dispatchEvent(new MouseEvent("mouseenter")); const l = document.querySelector(".call.lit");
		const s = l ? l.closest(".lane").dataset.external + " " + l.dataset.seq : "";
		br.dispatchEvent(new MouseEvent("mouseleave")); return s; })()`)
	if lit != "payments 4" {
		t.Errorf("the external-duplicate breach lights up %q, want the second charge, payments 4", lit)
	}
}
