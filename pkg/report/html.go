package report

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/runner"
)

// The HTML report is one page that needs nothing but itself: its styles
// and script are inline, and its Content-Security-Policy lets it load
// nothing else and run no script but its own. Every value from input is
// written through escape.Line (as the text report writes it) and then
// html/template, so an id with markup in it shows as text.

//go:embed html.tmpl
var htmlSource string

//go:embed html.js
var htmlScript string

//go:embed html.css
var htmlStyle string

var htmlPage = template.Must(template.New("page").Parse(htmlSource))

// htmlMaxBars is the most deliveries one timeline draws; the page says
// how many more there were.
const htmlMaxBars = 400

// htmlBrokenKeys is how many broken keys a replay draws a timeline of.
const htmlBrokenKeys = 5

// page is what the template renders.
type page struct {
	Title   string
	Verdict string // PASS, FAIL or ERROR
	Lines   []string
	Errors  []string
	Files   []htmlFile
	Replay  *htmlReplay
	Script  template.JS
	Style   template.CSS
	Policy  string
	Legend  []htmlOutcome
	// Calls are the marks of the calls to externals the page draws, by
	// kind, for its legend.
	Calls []htmlOutcome
}

type htmlOutcome struct{ Class, Glyph, Word string }

type htmlFile struct {
	Name, File string
	About      []string
	Checks     []htmlCheck
}

type htmlCheck struct {
	ID       string
	Name     string
	Pos      string
	Passed   bool
	Line     string
	Failures []string
	Notes    []string
	Broken   []htmlBreach
	Timeline *htmlTimeline
	// Statements are those of the delivery a statement fault landed in:
	// one column per connection, one row per statement in the order the
	// database saw them.
	Statements *htmlStatements
	// Diagnosis is why a target's failing check failed (pkg/diagnose);
	// its evidence statements are marked in Statements and on the
	// timeline's lanes of the workers that ran them.
	Diagnosis *htmlDiagnosis
}

// htmlDiagnosis is a failing check's diagnosis in the text report's
// words.
type htmlDiagnosis struct {
	Why, Fix string
	Pattern  string
}

type htmlStatements struct {
	Workers []int
	// Heads name each connection's column, with the worker whose
	// delivery used it when that is known.
	Heads []string
	Rows  []htmlStatementRow
}

type htmlStatementRow struct {
	Cells []string // one per worker; only the statement's own is set
	Held  bool
	// Evidence: the check's diagnosis rests on this statement.
	Evidence bool
	// Mark: the row is the mark of the consumer's answer, no statement.
	Mark bool
}

// htmlBreach is one broken invariant as the text report says it, and the
// delivery that broke it, when one did.
type htmlBreach struct {
	Invariant string
	Sentence  string
	Bar       string // the id of the bar of the delivery that broke it
	Where     string // that delivery in words
}

type htmlTimeline struct {
	Scale   string
	Ticks   []htmlTick
	Lanes   []htmlLane
	Omitted string
	// Drain says what the broker redelivered to the consumer while the
	// check drained, after its last delivery: no delivery of the
	// timeline stands for it.
	Drain string
	// Waits are the check's waits for a broker's consumer to take what
	// was published, on the broker's lane.
	Waits []htmlWait
	// Externals are the lanes of the calls the consumer made to the
	// stand-ins of its externals while the check ran, one per external;
	// CallsOmitted says which calls they do not draw.
	Externals    []htmlExternal
	CallsOmitted string
}

// htmlWait is one wait for a broker's consumer, placed on the timeline.
type htmlWait struct{ Left, Width, Label string }

type htmlTick struct{ Left, Label string }

type htmlLane struct {
	Lane int
	Name string
	Bars []htmlBar
	// Evidence names the statements of this lane's worker the check's
	// diagnosis rests on ("statements 2, 8"), or is empty.
	Evidence string
}

type htmlBar struct {
	ID      string
	Seq     int
	Left    string // percent of the timeline
	Width   string
	Outcome string
	Glyph   string
	Label   string
	Title   string
	Broken  []string // invariants this delivery broke
	Crash   string   // the crash mark's words, if the consumer was killed
	Held    *htmlHeld
	Restart *htmlHeld // from the kill until the restarted consumer was ready
}

type htmlHeld struct{ Left, Width, Label string }

// outcomes lists every outcome with its mark: a shape that reads without
// colour, and a class that colours it.
var outcomes = []htmlOutcome{
	{"processed", "✓", string(consumer.Processed)},
	{"duplicate", "=", string(consumer.Duplicate)},
	{"conflict", "≠", string(consumer.Conflict)},
	{"failed", "✗", string(consumer.Failed)},
	{"crashed", "↯", string(consumer.Crashed)},
	{"acked", "✓", string(consumer.Acked)},
	{"rejected", "⊘", string(consumer.Rejected)},
	{"unacked", "↻", string(consumer.Unacked)},
}

func outcomeOf(o consumer.Outcome) htmlOutcome {
	for _, x := range outcomes {
		if x.Word == string(o) {
			return x
		}
	}
	return htmlOutcome{Class: "other", Glyph: "?", Word: escape.Line(string(o))}
}

// policy is the page's Content-Security-Policy: nothing from anywhere,
// inline styles, and the one script whose hash it names.
func policy() string {
	sum := sha256.Sum256([]byte(htmlScript))
	return "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; img-src data:"
}

func newPage(title string) *page {
	return &page{Title: title, Script: template.JS(htmlScript), Style: template.CSS(htmlStyle), Policy: policy()}
}

// HTML writes a run as one self-contained page: per check its verdict,
// what failed in the text report's words, and a timeline of its
// deliveries, one lane per worker.
func HTML(w io.Writer, run *Run) error {
	p := newPage("redeliver " + cmp.Or(run.Command, "run"))
	p.Verdict = verdictWord(run.Verdict())
	for _, e := range run.Errors {
		p.Errors = append(p.Errors, errorLine(e.Pos.String(), e.Msg))
	}
	checks, failed := run.checks(), run.failed()
	switch {
	case len(run.Errors) > 0:
		p.Lines = append(p.Lines, "the run did not complete: there is no verdict on its checks")
	case failed > 0:
		p.Lines = append(p.Lines, fmt.Sprintf("%d of %d checks failed", failed, checks))
	default:
		p.Lines = append(p.Lines, fmt.Sprintf("%s passed", count(int64(checks), "check", "checks")))
	}
	p.Lines = append(p.Lines, fmt.Sprintf("seed %d", run.Seed))
	for fi, f := range run.Files {
		hf := htmlFile{Name: escape.Line(f.Name), File: escape.Line(f.File)}
		if f.Target != "" {
			hf.About = append(hf.About, escape.Line("target: "+f.Target+"; effects: "+f.Effects))
		} else if f.Strategy != "" {
			hf.About = append(hf.About, "strategy "+string(f.Strategy))
		}
		hf.About = append(hf.About, counterLine(f))
		for ci := range f.Checks {
			hf.Checks = append(hf.Checks, htmlCheckOf(fmt.Sprintf("f%d-c%d", fi+1, ci+1), &f.Checks[ci], brokerOf(f.Target), diagnosisOf(f, &f.Checks[ci])))
		}
		p.Files = append(p.Files, hf)
	}
	p.Legend = legend(run)
	p.Calls = callLegend(p.Files)
	return htmlPage.Execute(w, p)
}

func verdictWord(v invariant.Verdict) string {
	switch v {
	case invariant.Pass:
		return "PASS"
	case invariant.Fail:
		return "FAIL"
	}
	return "ERROR"
}

func errorLine(pos, msg string) string {
	if pos != "" {
		return escape.Line(pos) + ": " + escape.Message(msg)
	}
	return escape.Message(msg)
}

// legend lists the outcomes the run's deliveries had.
func legend(run *Run) []htmlOutcome {
	seen := map[consumer.Outcome]bool{}
	for _, f := range run.Files {
		for _, c := range f.Checks {
			for _, r := range c.History {
				seen[r.Result.Outcome] = true
			}
		}
	}
	var out []htmlOutcome
	for _, o := range outcomes {
		if seen[consumer.Outcome(o.Word)] {
			out = append(out, o)
		}
	}
	return out
}

// htmlCheckOf is one check: its verdict, its failures as the text report
// words them, and its timeline with the deliveries that broke an
// invariant marked.
func htmlCheckOf(id string, c *runner.CheckResult, broker string, d *diagnose.Diagnosis) htmlCheck {
	hc := htmlCheck{ID: id, Name: escape.Line(c.Name), Pos: escape.Line(c.Pos.String()), Passed: c.Passed, Line: escape.Line(CheckLine(c.Line))}
	for _, f := range c.Failures {
		hc.Failures = append(hc.Failures, locatedLines(f))
	}
	if c.Schedules > 0 {
		note := fmt.Sprintf("explored under %s", count(int64(c.Schedules), "schedule", "schedules"))
		if !c.Passed {
			note += "; the timeline is the first failing schedule's"
		}
		hc.Notes = append(hc.Notes, note)
	}
	if len(c.Held) > 0 {
		var ps []string
		for _, p := range c.Held {
			ps = append(ps, string(p))
		}
		note := "workers held at " + strings.Join(ps, ", ")
		if c.Schedules > 0 {
			note = "across its schedules, workers were held at " + strings.Join(ps, ", ")
		}
		hc.Notes = append(hc.Notes, note)
	}
	if k := c.Counters; k.HeldBack > 0 || k.KilledAtStop > 0 {
		hc.Notes = append(hc.Notes, words.HeldBack(k.HeldBack, k.HeldBackRestarts, k.KilledAtStop, consumer.StopGrace))
	}
	drain := ""
	if n := c.Counters.BrokerRedelivered; n > 0 {
		hc.Notes = append(hc.Notes, fmt.Sprintf("the broker redelivered %s", count(int64(n), "message", "messages")))
		drain = fmt.Sprintf("%s redelivered %s while the check drained", broker, count(int64(n), "message", "messages"))
	}
	tl, bars, calls := timeline(id, c.History, c.Violations, c.Drains, c.Calls)
	if tl != nil {
		tl.Drain = drain
		if n := len(tl.Waits); n > 0 && drain != "" {
			tl.Waits[n-1].Label += "; " + drain
			tl.Drain = ""
		}
	}
	hc.Timeline = tl
	hc.Statements = statementsOf(shownTrace(c))
	if d != nil {
		lines := diagnosisLines(d)
		hc.Diagnosis = &htmlDiagnosis{Pattern: string(d.Pattern), Why: escape.Line(lines[0])}
		if len(lines) > 1 {
			hc.Diagnosis.Fix = escape.Line(lines[1])
		}
		markEvidence(hc.Statements, tl, c.Trace, d.Evidence)
	}
	for _, v := range c.Violations {
		hc.Broken = append(hc.Broken, breachOf(v, bars, calls))
	}
	return hc
}

// brokerOf names the broker of a target as its description does
// (JetStream, RabbitMQ), or "the broker".
func brokerOf(target string) string {
	for _, b := range []string{"JetStream", "RabbitMQ"} {
		if strings.HasPrefix(target, b+" ") {
			return b
		}
	}
	return "the broker"
}

// breachOf is one violation as the text report says it, pointing at the
// bar of the delivery that broke it, or at the mark of the call to an
// external that did.
func breachOf(v invariant.Violation, bars map[int]*htmlBar, calls map[callRef]*htmlCall) htmlBreach {
	b := htmlBreach{Invariant: string(v.Invariant), Sentence: escape.Line(v.String())}
	if v.By == nil {
		if c := callOf(calls, v); c != nil {
			b.Bar = c.ID
			b.Where = "call " + strconv.Itoa(c.Seq) + " at " + escape.Line(v.External)
		}
		return b
	}
	if bar := barOf(bars, v.By.Seq); bar != nil {
		b.Bar = bar.ID
		b.Where = "delivery #" + strconv.Itoa(v.By.Seq) + " on " + laneName(v.By.Span.Lane)
	}
	return b
}

func barOf(bars map[int]*htmlBar, seq int) *htmlBar { return bars[seq] }

func laneName(lane int) string {
	if lane == 0 {
		return "the lane of deliveries made one at a time"
	}
	return "worker " + strconv.Itoa(lane)
}

func laneTitle(lane int) string {
	if lane == 0 {
		return "one at a time"
	}
	return "worker " + strconv.Itoa(lane)
}

// timeline lays out a history: by the wall clock when every delivery
// recorded when it ran, else one slot per record in the order they were
// made; on a timeline by the wall clock, the calls to externals made
// while it ran too. It returns the bars by every Seq they stand for, and
// the marks of the calls.
func timeline(id string, history []invariant.Record, vs []invariant.Violation, drains []runner.Drain, calls []invariant.Call) (*htmlTimeline, map[int]*htmlBar, map[callRef]*htmlCall) {
	bars := map[int]*htmlBar{}
	if len(history) == 0 {
		return nil, bars, nil
	}
	tl := &htmlTimeline{}
	drawn := history
	if len(drawn) > htmlMaxBars {
		drawn = drawn[:htmlMaxBars]
		more := 0
		for _, r := range history[htmlMaxBars:] {
			more += 1 + r.Repeats
		}
		tl.Omitted = fmt.Sprintf("and %s after these, not drawn: a timeline draws at most %d records", count(int64(more), "delivery", "deliveries"), htmlMaxBars)
	}
	broken := brokenBySeq(vs)
	if len(drawn) < len(history) {
		drains = nil // they come after deliveries the timeline does not draw
	}
	clk, t0, timed := tl.scaleOf(drawn, drains)
	lanes := map[int]*htmlLane{}
	for i, r := range drawn {
		b := recordBar(id, r, i, len(drawn), clk, t0, broken)
		s := r.Span
		l := lanes[s.Lane]
		if l == nil {
			l = &htmlLane{Lane: s.Lane, Name: laneTitle(s.Lane)}
			lanes[s.Lane] = l
		}
		l.Bars = append(l.Bars, b)
	}
	keys := make([]int, 0, len(lanes))
	for k := range lanes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		tl.Lanes = append(tl.Lanes, *lanes[k])
	}
	for li := range tl.Lanes {
		for bi := range tl.Lanes[li].Bars {
			b := &tl.Lanes[li].Bars[bi]
			for _, r := range drawn {
				if r.Seq == b.Seq {
					for seq := r.Seq; seq <= r.Seq+r.Repeats; seq++ {
						bars[seq] = b
					}
				}
			}
		}
	}
	if !timed {
		return tl, bars, nil
	}
	return tl, bars, tl.placeCalls(id, calls, vs, clk, t0, len(drawn) < len(history))
}

// scaleOf sets the timeline's scale, its ticks and the waits for the
// broker's consumer: by the wall clock from the first delivery where the
// records were timed (clk places a time), else in their order (clk is
// nil).
func (tl *htmlTimeline) scaleOf(drawn []invariant.Record, drains []runner.Drain) (clk *clock, t0 time.Time, timed bool) {
	t0, t1, timed := timedRange(drawn, drains)
	if !timed {
		tl.Scale = "in the order the deliveries were made (no times were recorded)"
		return nil, t0, false
	}
	clk = newClock(drawn, drains)
	tl.Scale = "by the wall clock from the check's first delivery, " + span(t1.Sub(t0)) + " in all; within a burst of deliveries time runs evenly, the idle time between bursts is cut short"
	if len(drains) > 0 {
		tl.Scale += ", and the waits for the broker's consumer take their share of the time, up to half the timeline"
	}
	tl.Ticks = clk.ticks(t0)
	for _, d := range drains {
		left := clk.x(d.From)
		tl.Waits = append(tl.Waits, htmlWait{Left: percent(left), Width: percent(clk.x(d.To) - left),
			Label: fmt.Sprintf("↦ the consumer took what was published from +%s to +%s (%s)", span(d.From.Sub(t0)), span(d.To.Sub(t0)), span(d.To.Sub(d.From)))})
	}
	return clk, t0, true
}

// brokenBySeq is, by each delivery's Seq, the invariants it broke.
func brokenBySeq(vs []invariant.Violation) map[int][]string {
	broken := map[int][]string{}
	for _, v := range vs {
		if v.By != nil && !slices.Contains(broken[v.By.Seq], string(v.Invariant)) {
			broken[v.By.Seq] = append(broken[v.By.Seq], string(v.Invariant))
		}
	}
	return broken
}

// timedRange is when the first delivery drawn was sent and the last
// answered (or the last wait for the broker ended), and timed whether
// every one recorded its times, so the timeline runs by the wall clock.
func timedRange(drawn []invariant.Record, drains []runner.Drain) (t0, t1 time.Time, timed bool) {
	for i, r := range drawn {
		s := r.Span
		if s.Sent.IsZero() || s.Answered.Before(s.Sent) {
			return t0, t1, false
		}
		if i == 0 || s.Sent.Before(t0) {
			t0 = s.Sent
		}
		if i == 0 || s.Answered.After(t1) {
			t1 = s.Answered
		}
	}
	for _, d := range drains {
		if d.To.After(t1) {
			t1 = d.To
		}
	}
	return t0, t1, t1.After(t0)
}

// recordBar is the bar of record r, the i-th of n drawn: placed by clk (nil:
// one slot per record), labelled, marked with its kill, hold, restart
// and the invariants it broke.
func recordBar(id string, r invariant.Record, i, n int, clk *clock, t0 time.Time, broken map[int][]string) htmlBar {
	timed := clk != nil
	s := r.Span
	o := outcomeOf(r.Result.Outcome)
	b := htmlBar{ID: fmt.Sprintf("%s-d%d", id, r.Seq), Seq: r.Seq, Outcome: o.Class, Glyph: o.Glyph}
	if timed {
		left := clk.x(s.Sent)
		b.Left, b.Width = percent(left), percent(clk.x(s.Answered)-left)
	} else {
		b.Left, b.Width = percent(float64(i)*100/float64(n)), percent(100/float64(n))
	}
	label := "#" + strconv.Itoa(r.Seq) + " " + o.Word
	if r.Repeats > 0 {
		label += " ×" + strconv.Itoa(r.Repeats+1)
	}
	b.Label = label
	for seq := r.Seq; seq <= r.Seq+r.Repeats; seq++ {
		b.Broken = append(b.Broken, broken[seq]...)
	}
	switch {
	case s.Crash != "":
		b.Crash = "killed (" + escape.Line(s.Crash) + ")"
	case r.Result.Outcome == consumer.Crashed:
		b.Crash = "crashed after its commit, before the ack"
	}
	if s.HeldAt != "" {
		h := &htmlHeld{Label: heldLabel(s.HeldAt)}
		if timed && !s.Held.IsZero() && !s.Released.Before(s.Held) && s.Answered.After(s.Sent) {
			whole := float64(s.Answered.Sub(s.Sent))
			h.Left = percent(float64(s.Held.Sub(s.Sent)) / whole * 100)
			h.Width = percent(float64(s.Released.Sub(s.Held)) / whole * 100)
			h.Label += " for " + span(s.Released.Sub(s.Held))
		} else {
			h.Left, h.Width = "0", "0"
		}
		b.Held = h
	}
	if !s.Restarted.IsZero() {
		b.Restart = restartOf(s, t0, timed)
	}
	b.Title = barTitle(r, s, t0, timed)
	if b.Crash != "" {
		b.Title += "; " + b.Crash
	}
	if b.Restart != nil {
		b.Title += "; " + b.Restart.Label
	}
	for _, inv := range b.Broken {
		b.Title += "; broke " + inv
	}
	return b
}

// restartOf places the restart of a consumer a crash killed on its
// delivery's bar: from the kill until it was ready again.
func restartOf(s invariant.Span, t0 time.Time, timed bool) *htmlHeld {
	r := &htmlHeld{Left: "100", Width: "0", Label: "restarted"}
	if !timed || !s.Answered.After(s.Sent) {
		return r
	}
	killed := s.Killed
	if killed.IsZero() || killed.After(s.Restarted) {
		killed = s.Restarted
	}
	whole := float64(s.Answered.Sub(s.Sent))
	r.Left = percent(float64(killed.Sub(s.Sent)) / whole * 100)
	r.Width = percent(float64(s.Restarted.Sub(killed)) / whole * 100)
	r.Label = "restarted, ready again at +" + span(s.Restarted.Sub(t0))
	if !s.Killed.IsZero() {
		r.Label += ", " + span(s.Restarted.Sub(killed)) + " after the kill"
	}
	return r
}

// barTitle is a delivery in words, for the bar's tooltip.
func barTitle(r invariant.Record, s invariant.Span, t0 time.Time, timed bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "delivery #%d", r.Seq)
	if r.Repeats > 0 {
		fmt.Fprintf(&b, " to #%d", r.Seq+r.Repeats)
	}
	if r.Step > 0 {
		fmt.Fprintf(&b, " (step %d", r.Step)
		if p := r.Pos.String(); p != "" {
			b.WriteString(", " + escape.Line(p))
		}
		b.WriteString(")")
	} else if p := r.Pos.String(); p != "" {
		b.WriteString(" (" + escape.Line(p) + ")")
	}
	b.WriteString(" of " + escape.Input(r.EventID))
	if r.Key != "" {
		b.WriteString(", key " + escape.Input(r.Key))
	}
	b.WriteString(": " + escape.Line(string(r.Result.Outcome)))
	if r.Result.Said != "" && r.Result.Said != string(r.Result.Outcome) {
		b.WriteString(" (" + escape.Line(r.Result.Said) + ")")
	} else if r.Result.Err != nil {
		b.WriteString(" (" + escape.Line(r.Result.Err.Error()) + ")")
	}
	if timed {
		fmt.Fprintf(&b, "; sent at +%s, answered at +%s", span(s.Sent.Sub(t0)), span(s.Answered.Sub(t0)))
	}
	if s.HeldAt != "" {
		b.WriteString("; " + heldLabel(s.HeldAt))
	}
	return b.String()
}

// heldLabel says where a worker was held: at a fault point ("held at
// after-check"), or at a statement boundary ("held after connection 1's
// statement 1").
func heldLabel(p consumer.FaultPoint) string {
	if s := string(p); strings.HasPrefix(s, "before ") || strings.HasPrefix(s, "after ") {
		return "held " + escape.Line(s)
	}
	return "held at " + string(p)
}

// span writes a duration for a timeline: µs under a millisecond, ms
// under a second, s above.
func span(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond), 'f', 0, 64) + " µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
}

func percent(f float64) string {
	if f < 0 {
		f = 0
	}
	if f > 100 {
		f = 100
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}

// htmlReplay is a replay's part of the page: its totals, what it broke,
// the strategy table, and the timelines of its first broken keys.
type htmlReplay struct {
	About      []string
	Totals     []htmlTotal
	Beside     []htmlTotal // counted beside the deliveries, not among them
	Chart      *htmlChart
	Lines      []string
	Invariants []htmlInvariant
	Strategies []htmlStrategy
	Summary    string
	Keys       []htmlKey
}

type htmlTotal struct {
	Class, Glyph, Word string
	N                  string
	Share              string // percent of the deliveries
}

type htmlInvariant struct {
	Name, Meaning string
	Broken        int64
	Examples      []string
	More          string
}

type htmlStrategy struct {
	Name                                string
	Effects, Keys, MostPerKey, Conflict int64
	Safe                                bool
	Verdict                             string
}

type htmlKey struct {
	ID       string
	Key      string
	Broken   []htmlBreach
	Timeline *htmlTimeline
}

func totals(deliveries int64, counts []int64, classes []htmlOutcome) []htmlTotal {
	var out []htmlTotal
	for i, n := range counts {
		share := 0.0
		if deliveries > 0 {
			share = float64(n) / float64(deliveries) * 100
		}
		o := classes[i]
		out = append(out, htmlTotal{Class: o.Class, Glyph: o.Glyph, Word: o.Word, N: strconv.FormatInt(n, 10), Share: percent(share)})
	}
	return out
}

func outcomesNamed(names ...consumer.Outcome) []htmlOutcome {
	var out []htmlOutcome
	for _, n := range names {
		out = append(out, outcomeOf(n))
	}
	return out
}

// summarised is what a replay's page says of its size: it counts every
// delivery and draws only the first broken keys.
func summarised(deliveries int64, drawn bool) string {
	s := fmt.Sprintf("This page summarises the replay's %s: it counts them, and draws no bar per delivery", count(deliveries, "delivery", "deliveries"))
	if drawn {
		return s + fmt.Sprintf(" but those of its first %d broken keys.", htmlBrokenKeys)
	}
	return s + "."
}

// ReplayHTML writes a built-in replay as one self-contained page: its
// totals, the invariants it broke with their first examples, and the
// strategy table. The built-in replay is judged by queries over the rows
// it stored and keeps no history of its deliveries: there is no timeline
// to draw, and the page says so.
func ReplayHTML(w io.Writer, r *Replay) error {
	rep := r.Report
	p := newPage("redeliver replay")
	p.Verdict = verdictWord(rep.Verdict)
	if r.Incomplete() {
		p.Verdict = "ERROR"
		p.Lines = append(p.Lines, "the replay did not complete: there is no verdict")
	}
	for _, e := range r.Errors {
		p.Errors = append(p.Errors, errorLine(e.Pos.String(), e.Msg))
	}
	hr := &htmlReplay{}
	replayAbout(hr, rep)
	replayTotals(hr, rep)
	in := rep.Injected
	hr.Lines = append(hr.Lines,
		fmt.Sprintf("injected: %d redelivered after a crash before the ack, %d crashed mid-transaction and retried, %d rewound by %s, %d republished under a new id",
			in.Redelivered, in.Crashed, in.Rewound, count(in.Rebalances, "rebalance", "rebalances"), in.Republished))
	replayInvariants(hr, rep)
	replayStrategies(hr, rep)
	if len(rep.Strategies) == 0 && rep.NotCompared != "" {
		hr.Lines = append(hr.Lines, "strategies: not compared ("+escape.Line(rep.NotCompared)+")")
	}
	if rep.Reproducer != "" {
		hr.Lines = append(hr.Lines, fmt.Sprintf("reproducer: %s (%s); its page, from redeliver run --report html=FILE, draws the timeline of the first broken key",
			escape.Input(rep.Reproducer), count(int64(rep.ReproducerSteps), "delivery", "deliveries")))
	}
	replaySummary(p, hr, rep)
	p.Replay = hr
	return htmlPage.Execute(w, p)
}

// replayAbout adds what a replay read and what took its deliveries, then
// its line and counters.
func replayAbout(hr *htmlReplay, rep *replay.Report) {
	var ins []string
	for _, in := range rep.Inputs {
		ins = append(ins, fmt.Sprintf("%s (%s)", escape.Input(in.File), in.Format))
	}
	hr.About = append(hr.About, "captures: "+strings.Join(ins, ", "))
	k := rep.Counters
	// What took the deliveries, from the facts the report holds: the
	// handler's strategy and store, or the consumer redeliver reached and
	// its effects; then the replay's line when it has one, and its
	// counters: a consumer's answers, or what the handler wrote.
	if rep.Strategy != "" {
		hr.About = append(hr.About, fmt.Sprintf("strategy %s on %s", rep.Strategy, escape.Line(rep.Store)))
	}
	if t := rep.Target; t != nil {
		hr.About = append(hr.About, escape.Line("target: "+t.Consumer+"; effects: "+t.Effects))
	}
	hr.About = append(hr.About, fmt.Sprintf("seed %d", rep.Seed))
	if name := replayName(rep); name != "" {
		hr.Lines = append(hr.Lines, escape.Line(name)+": "+escape.Line(replayLine(rep)))
	}
	if answers(rep) {
		hr.Lines = append(hr.Lines, targetCounterLine(k))
	} else {
		hr.Lines = append(hr.Lines,
			fmt.Sprintf("%s, %s, %s written", count(int64(k.Deliveries), "delivery", "deliveries"), count(int64(k.Redeliveries), "redelivery", "redeliveries"), count(rep.Effects, "effect", "effects")))
	}
}

// replaySummary says what a replay's page draws of its deliveries: the
// timelines of its first broken keys when it kept them, and why not
// otherwise.
func replaySummary(p *page, hr *htmlReplay, rep *replay.Report) {
	k := rep.Counters
	switch {
	case rep.Timelines && rep.Verdict != invariant.Error:
		drawn := brokenKeys(hr, rep)
		hr.Summary = summarised(int64(k.Deliveries), drawn > 0)
		if drawn > 0 && len(rep.History) == 0 {
			hr.Summary += " This replay was too long to keep its deliveries in memory: its broken keys are listed without their timelines."
		}
		p.Legend = outcomesNamed(consumer.Acked, consumer.Conflict, consumer.Rejected, consumer.Unacked)
	case rep.Timelines:
		hr.Summary = summarised(int64(k.Deliveries), false)
	case len(rep.Violations) > 0:
		hr.Summary = summarised(int64(k.Deliveries), false) + " No timeline of its first broken keys is drawn: the built-in replay keeps no record of when or in what order it made each delivery, only the rows it stored and judges; a reproducer (--emit-scenario) replays the first broken key as a scenario, whose page draws it."
	default:
		hr.Summary = summarised(int64(k.Deliveries), false) + " The built-in replay judges the rows it stored and keeps no history of its deliveries; a reproducer (--emit-scenario) replays the first broken key as a scenario, whose page draws it."
	}
}

// replayTotals adds what came of a replay's deliveries: what the handler
// returned, when the report has its outcomes; else the consumer's
// answers.
func replayTotals(hr *htmlReplay, rep *replay.Report) {
	k := rep.Counters
	if o := rep.Outcomes; o != nil {
		classes := outcomesNamed(consumer.Processed, consumer.Duplicate, consumer.Conflict, consumer.Failed, consumer.Crashed)
		hr.Totals = totals(int64(k.Deliveries), []int64{o.Processed, o.Duplicate, o.Conflict, o.Failed, o.Crashed}, classes)
		hr.Chart = chartOf(rep.Over, classes, true)
	} else {
		classes := []htmlOutcome{outcomeOf(consumer.Acked), outcomeOf(consumer.Conflict), {Class: "unacked", Glyph: "↻", Word: "rejected or unacked"}}
		hr.Totals = totals(int64(k.Deliveries), []int64{int64(k.Processed), int64(k.Conflicts), int64(k.Failed)}, classes)
		if n := k.BrokerRedelivered; n > 0 {
			hr.Beside = append(hr.Beside, htmlTotal{Class: "unacked", Glyph: "↻", Word: "redelivered by the broker", N: strconv.Itoa(n)})
		}
		hr.Chart = chartOf(rep.Over, classes, false)
		if placed := chartCrashes(rep.Over); hr.Chart != nil && int64(k.Crashed) > placed {
			hr.Chart.Caption += fmt.Sprintf(" %s of the %d are not on it: an instance killed on a timer stands for no delivery.", count(int64(k.Crashed)-placed, "crash", "crashes"), k.Crashed)
		}
	}
}

// replayInvariants adds the invariants a replay checked, and the first
// examples of each it broke.
func replayInvariants(hr *htmlReplay, rep *replay.Report) {
	broken := map[string]*htmlInvariant{}
	for _, ic := range rep.Invariants {
		hr.Invariants = append(hr.Invariants, htmlInvariant{Name: ic.Name, Meaning: ic.Description, Broken: ic.Broken})
	}
	for i := range hr.Invariants {
		broken[hr.Invariants[i].Name] = &hr.Invariants[i]
	}
	for _, v := range rep.Violations {
		hi := broken[v.Invariant]
		if hi == nil {
			hr.Invariants = append(hr.Invariants, htmlInvariant{Name: v.Invariant, Broken: v.Count})
			hi = &hr.Invariants[len(hr.Invariants)-1]
		}
		for i, x := range v.Examples {
			if i == replayExamples {
				break
			}
			hi.Examples = append(hi.Examples, escape.Line(breach(x)))
		}
		if more := v.Count - int64(len(hi.Examples)); more > 0 {
			hi.More = fmt.Sprintf("and %d more", more)
		}
	}
}

// replayStrategies adds the table of what each other strategy would have
// done with the capture.
func replayStrategies(hr *htmlReplay, rep *replay.Report) {
	for _, s := range rep.Strategies {
		hs := htmlStrategy{Name: string(s.Strategy), Effects: s.Effects, Keys: s.Keys, MostPerKey: s.MostPerKey, Conflict: s.Conflicts, Safe: s.Safe, Verdict: "safe"}
		if s.Strategy == rep.Strategy {
			hs.Name += " (this replay)"
		}
		if !s.Safe {
			why := append([]string{}, s.Broken...)
			if s.Unexpected > 0 {
				why = append(why, count(s.Unexpected, "unexpected failure", "unexpected failures"))
			}
			hs.Verdict = "unsafe: " + strings.Join(why, ", ")
		}
		hr.Strategies = append(hr.Strategies, hs)
	}
}

// brokenKeys adds the timelines of a replay into a target's first broken
// keys, each drawn from the deliveries of that key the replay kept, and
// returns how many keys it listed.
func brokenKeys(hr *htmlReplay, rep *replay.Report) int {
	var keys []string
	for _, v := range rep.Breaches {
		key := keyOf(v)
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
		if len(keys) == htmlBrokenKeys {
			break
		}
	}
	for i, key := range keys {
		var hist []invariant.Record
		for _, r := range rep.History {
			if r.Key == key || (r.Key == "" && r.EventID == key) {
				hist = append(hist, r)
			}
		}
		var vs []invariant.Violation
		for _, v := range rep.Breaches {
			if keyOf(v) == key {
				vs = append(vs, v)
			}
		}
		id := fmt.Sprintf("k%d", i+1)
		tl, bars, _ := timeline(id, hist, vs, rep.Drains, nil)
		hk := htmlKey{ID: id, Key: escape.Input(key), Timeline: tl}
		for _, v := range vs {
			hk.Broken = append(hk.Broken, breachOf(v, bars, nil))
		}
		hr.Keys = append(hr.Keys, hk)
	}
	return len(keys)
}

// keyOf is the business key a violation is about, or its event.
func keyOf(v invariant.Violation) string {
	if v.By != nil && v.By.Key != "" {
		return v.By.Key
	}
	return v.EventID
}

// clock places the times of a timeline: the deliveries fall into bursts
// (deliveries in flight together, or one on its own), laid side by side
// with a short gap between them. Within a burst time runs evenly; a
// burst's width grows with how long it took, so that one delivery made on
// its own is as readable as a race that took a hundred times longer.
type clock struct {
	bursts []burst
	units  float64
}

type burst struct {
	from, to time.Time
	at, w    float64 // where it starts and how wide it is, in units
	drain    bool    // a wait for a broker's consumer
}

const burstGap = 0.4

func newClock(history []invariant.Record, drains []runner.Drain) *clock {
	bs := burstsOf(history, drains)
	sizeBursts(bs)
	c := &clock{}
	for i := range bs {
		if i > 0 {
			c.units += burstGap
		}
		bs[i].at = c.units
		c.units += bs[i].w
	}
	c.bursts = bs
	return c
}

// burstsOf groups the deliveries of a history into bursts, in the order
// they were sent, and puts each drain in its place among them.
func burstsOf(history []invariant.Record, drains []runner.Drain) []burst {
	spans := make([]invariant.Span, len(history))
	for i, r := range history {
		spans[i] = r.Span
	}
	slices.SortFunc(spans, func(a, b invariant.Span) int { return a.Sent.Compare(b.Sent) })
	var bs []burst
	for _, s := range spans {
		if n := len(bs); n > 0 && !s.Sent.After(bs[n-1].to) {
			if s.Answered.After(bs[n-1].to) {
				bs[n-1].to = s.Answered
			}
			continue
		}
		bs = append(bs, burst{from: s.Sent, to: s.Answered})
	}
	// A broker's consumer takes what was published after the publishes:
	// each wait for it is a burst of its own, in its place.
	for _, d := range drains {
		if !d.To.After(d.From) {
			continue
		}
		i, _ := slices.BinarySearchFunc(bs, d.From, func(b burst, t time.Time) int { return b.from.Compare(t) })
		bs = slices.Insert(bs, i, burst{from: d.From, to: d.To, drain: true})
	}
	return bs
}

// sizeBursts sets each burst's width: a delivery burst's grows with how
// long it took, next to the longest; the drains share the wall clock
// they took.
func sizeBursts(bs []burst) {
	longest, all := time.Duration(0), time.Duration(0)
	for _, b := range bs {
		if !b.drain {
			longest = max(longest, b.to.Sub(b.from))
		}
	}
	if len(bs) > 0 {
		all = bs[len(bs)-1].to.Sub(bs[0].from)
	}
	var share float64 // of the time, the drains'
	for i := range bs {
		w := 1.0
		if longest > 0 && !bs[i].drain {
			w += 4 * min(1, float64(bs[i].to.Sub(bs[i].from))/float64(longest))
		}
		if bs[i].drain && all > 0 {
			share += float64(bs[i].to.Sub(bs[i].from)) / float64(all)
		}
		bs[i].w = w
	}
	if share > 0 {
		// The drains take their share of the wall clock, up to half the
		// timeline: the seconds a consumer group spent are seen beside the
		// milliseconds of the publishes, which stay readable.
		rest := 0.0
		for _, b := range bs {
			if !b.drain {
				rest += b.w + burstGap
			}
		}
		scale := min(share, drainShare) / share
		for i := range bs {
			if bs[i].drain {
				s := float64(bs[i].to.Sub(bs[i].from)) / float64(all) * scale
				bs[i].w = max(1, s*rest/(1-min(share, drainShare)))
			}
		}
	}
}

// drainShare is the most of a timeline its drains take.
const drainShare = 0.5

// x is where a time falls, in percent of the timeline.
func (c *clock) x(t time.Time) float64 {
	for _, b := range c.bursts {
		if t.After(b.to) {
			continue
		}
		at := b.at
		if d := b.to.Sub(b.from); d > 0 && t.After(b.from) {
			at += b.w * float64(t.Sub(b.from)) / float64(d)
		}
		return at / c.units * 100
	}
	return 100
}

// ticks label where each burst starts, as long as they do not crowd.
func (c *clock) ticks(t0 time.Time) []htmlTick {
	var out []htmlTick
	last := -100.0
	for _, b := range c.bursts {
		x := b.at / c.units * 100
		if x-last < 12 || x > 92 {
			continue
		}
		out = append(out, htmlTick{Left: percent(x), Label: "+" + span(b.from.Sub(t0))})
		last = x
	}
	end := c.bursts[len(c.bursts)-1].to
	return append(out, htmlTick{Left: percent(100), Label: "+" + span(end.Sub(t0))})
}

// markEvidence marks the statements a diagnosis rests on (numbered from
// 1): their rows in the statements table, and on the timeline the lane
// of the worker whose delivery ran them, where redeliver knows it.
func markEvidence(hs *htmlStatements, tl *htmlTimeline, stmts []consumer.Statement, evidence []int) {
	if hs != nil {
		n := 0
		for i := range hs.Rows {
			if hs.Rows[i].Mark {
				continue
			}
			n++
			hs.Rows[i].Evidence = slices.Contains(evidence, n)
		}
	}
	if tl == nil {
		return
	}
	byLane := map[int][]int{}
	for _, e := range evidence {
		if e >= 1 && e <= len(stmts) && stmts[e-1].Lane != 0 {
			byLane[stmts[e-1].Lane] = append(byLane[stmts[e-1].Lane], e)
		}
	}
	for i := range tl.Lanes {
		if ns := byLane[tl.Lanes[i].Lane]; len(ns) > 0 {
			tl.Lanes[i].Evidence = "◆ " + statementNumbers(ns)
		}
	}
}

// statementNumbers words statement numbers: "statement 2", "statements 2, 8".
func statementNumbers(ns []int) string {
	if len(ns) == 1 {
		return "statement " + strconv.Itoa(ns[0])
	}
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return "statements " + strings.Join(s, ", ")
}

// statementsOf lays out a delivery's statements: a column per
// connection, a row per statement, in the text report's words.
func statementsOf(stmts []consumer.Statement) *htmlStatements {
	if len(stmts) == 0 {
		return nil
	}
	hs := &htmlStatements{}
	for _, st := range stmts {
		if !slices.Contains(hs.Workers, st.Worker) {
			hs.Workers = append(hs.Workers, st.Worker)
		}
	}
	slices.Sort(hs.Workers)
	for _, w := range hs.Workers {
		head := "connection " + strconv.Itoa(w)
		if w == 0 {
			head = "calls to externals, by a worker not known"
		}
		for _, st := range stmts {
			if st.Worker == w && st.Lane != 0 {
				head += " — worker " + strconv.Itoa(st.Lane) + "'s"
				break
			}
		}
		for _, st := range stmts {
			if st.Worker == w && st.Instance != 0 {
				head += " — instance " + strconv.Itoa(st.Instance)
				break
			}
		}
		hs.Heads = append(hs.Heads, head)
	}
	again := false
	for i, line := range statementLines(stmts, true) {
		st := stmts[i]
		if len(hs.Workers) > 1 || st.Instance > 0 {
			_, line, _ = strings.Cut(line, ": ")
		}
		if st.Redelivery && !again {
			again = true
			mark := htmlStatementRow{Cells: make([]string, len(hs.Workers)), Mark: true}
			mark.Cells[slices.Index(hs.Workers, st.Worker)] = RedeliveryHeading
			hs.Rows = append(hs.Rows, mark)
		}
		if m := answeredMark(st); m != "" {
			mark := htmlStatementRow{Cells: make([]string, len(hs.Workers)), Mark: true}
			mark.Cells[slices.Index(hs.Workers, st.Worker)] = m
			hs.Rows = append(hs.Rows, mark)
		}
		row := htmlStatementRow{Cells: make([]string, len(hs.Workers)), Held: st.Held}
		row.Cells[slices.Index(hs.Workers, st.Worker)] = escape.Line(line)
		hs.Rows = append(hs.Rows, row)
	}
	return hs
}
