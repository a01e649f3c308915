package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/runner"
)

// Report is everything a replay found; the JSON form is documented in docs/replay-json.md.
type Report struct {
	Inputs   []Input           `json:"inputs"`
	Seed     int64             `json:"seed"`
	Strategy handler.Strategy  `json:"strategy"`
	Store    string            `json:"store"`
	Capture  CaptureReport     `json:"capture"`
	Injected Injected          `json:"injected"`
	Outcomes *Outcomes         `json:"outcomes,omitempty"` // what the built-in handler returned; nil for a consumer that answers instead (Counters)
	Counters consumer.Counters `json:"counters"`
	// Effects is how many effects the database holds after the replay;
	// NewEffects how many this replay added (zero when a finished replay is
	// replayed again on the same file).
	Effects    int64 `json:"effects"`
	NewEffects int64 `json:"new_effects"`
	Resumed    bool  `json:"resumed"`
	// Invariants are the invariants the replay checked, each with how many
	// times it was broken.
	Invariants []InvariantCheck `json:"invariants"`
	// Violations are the broken invariants, each with a count and examples.
	Violations []Violation `json:"violations"`
	// Unexpected are the deliveries that failed where no fault was
	// injected: the handler could not do its work (a business key that did
	// not resolve, a broken payload), which fails the replay. Nil when the
	// consumer's failures are not counted apart: a user's consumer's
	// rejected and unanswered deliveries are never acked, which its
	// invariants judge.
	Unexpected *Unexpected `json:"unexpected_failures,omitempty"`
	// FailOn lists the findings --fail-on asked about; FailedOn those of
	// them the capture holds.
	// Strategies says, when the capture gives business keys, how every
	// strategy the replay can run fares on it (same seed, same
	// injections); empty when not compared, and NotCompared says why when
	// it could not be.
	Strategies  []StrategyRow `json:"strategies"`
	NotCompared string        `json:"not_compared,omitempty"`
	FailOn      []Finding     `json:"fail_on"`
	FailedOn    []Finding     `json:"failed_on"`
	Reproducer  string        `json:"reproducer,omitempty"`
	// ReproducerSteps is how many deliveries the reproducer kept.
	ReproducerSteps int               `json:"reproducer_steps,omitempty"`
	Verdict         invariant.Verdict `json:"verdict"` // pass or fail; error when the replay did not finish

	// Target is set for a replay into the user's consumer (replay
	// --target): it names the consumer and its effects instead of a
	// strategy and a store, and the report leaves out what only the
	// built-in handler counts (see pkg/report).
	Target *Target `json:"-"`
	// Over counts the deliveries and crashes over the replay's course,
	// for the HTML report's chart.
	Over Over `json:"-"`
	// Breaches, History and Drains are what the HTML report draws the
	// timelines of a replay into a target's first broken keys from: every
	// breach with the delivery behind it, the deliveries of the broken
	// keys the replay kept in memory (none once it was too long to keep
	// them), and when it waited for a broker to drain.
	Breaches []invariant.Violation `json:"-"`
	History  []invariant.Record    `json:"-"`
	Drains   []runner.Drain        `json:"-"`
	// Timelines says the consumer keeps what the timelines above are
	// drawn from (a replay into a target does). The built-in replay
	// judges the rows it stored and keeps no record of when or in what
	// order it made each delivery, which its HTML report says.
	Timelines bool `json:"-"`

	examples int   // how many examples a list keeps
	keyed    int64 // deliveries of the capture that came with a business key
}

// Target is the consumer a replay into a target delivered to.
type Target struct {
	File     string `json:"file"`               // the --target file
	Consumer string `json:"consumer,omitempty"` // how redeliver reaches the consumer (and starts it); empty when the replay stopped first
	Effects  string `json:"effects,omitempty"`  // its effect table and the database that holds it; likewise
	// Logs are the files that keep the started instances' output (--logs),
	// one per instance and start.
	Logs []string `json:"logs,omitempty"`
	// Kills is what --kill-every did, when it was given.
	Kills *Kills `json:"kills,omitempty"`
	// Working is what --kill-working did, when it was given.
	Working *WorkingKills `json:"working_kills,omitempty"`
	// HeldBack is what stopping the instances at the end of a RabbitMQ
	// drain put back in the queue, when it put anything back.
	HeldBack *HeldBack `json:"held_back,omitempty"`
	// Given are the captures as --input gave them, which name the replay;
	// Broker says the consumer reads a broker the replay published to,
	// and Table is its effect table ("" for an effects query). With the
	// counters, the kills, the bad records and the broken invariants they
	// are what pkg/report words the replay's line from. Given is empty
	// when the replay stopped first.
	Given  []string `json:"-"`
	Broker bool     `json:"-"`
	Table  string   `json:"-"`
}

// Kills are the instance kills of --kill-every: how many, the period
// asked (counted from when the previous restart was ready), the real one
// (the time of the last kill over their number) and how long the
// restarts took on average.
type Kills struct {
	Count          int     `json:"count"`
	AskedSeconds   float64 `json:"asked_seconds"`
	EverySeconds   float64 `json:"every_seconds"`
	RestartSeconds float64 `json:"restart_seconds"`
	// Asked, Every and Restart are the same periods before their
	// rounding to the millisecond, which the text words.
	Asked, Every, Restart time.Duration `json:"-"`
}

// HeldBack is what the end of a drain found where the broker shows no
// other client a consumer's unacknowledged messages (RabbitMQ): the
// instances, stopped once the queue had stood empty, had held Messages
// unacknowledged, and were started again Restarts times to take them.
// KilledAtStop counts the instances that did not end within the stop's
// grace after their SIGTERM, and were killed: each such stop waited the
// whole grace.
type HeldBack struct {
	Restarts     int `json:"restarts"`
	Messages     int `json:"messages"`
	KilledAtStop int `json:"killed_at_stop,omitempty"`
}

// WorkingKills are the kills of --kill-working: the deliveries drawn,
// the instance kills made at their statements, how many of those
// interrupted the delivery's work (before a statement of it ran, or with
// a transaction of it open), and the drawn deliveries not killed: their
// statements ended before the boundary drawn (missed), or none could be
// tied to them (untied).
type WorkingKills struct {
	Probability float64 `json:"probability"`
	Drawn       int     `json:"drawn"`
	Killed      int     `json:"killed"`
	Interrupted int     `json:"interrupted"`
	Missed      int     `json:"missed"`
	Untied      int     `json:"untied"`
}

// Place is a line of a capture file. JSON writes it as file:line, the way
// the capture examples name lines.
type Place consumer.Location

// MarshalText writes the place as file:line.
func (p Place) MarshalText() ([]byte, error) { return []byte(consumer.Location(p).String()), nil }

// InvariantCheck is one invariant a replay checked.
type InvariantCheck struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Broken      int64  `json:"broken"`
}

// Checked lists the invariants a replay with the strategy checks over the
// stored rows, as the catalogue assigns them.
func Checked(s handler.Strategy) []*invariant.Invariant {
	return invariant.Checked(invariant.Replay, s)
}

// Input is a capture a replay read: as given (stdin for -), and its format.
type Input struct {
	File   string `json:"file"`
	Format string `json:"format"`
}

// CaptureReport is what the capture itself holds.
type CaptureReport struct {
	Deliveries         int64        `json:"deliveries"`
	DistinctIDs        int64        `json:"distinct_ids"`
	RepeatedIDs        int64        `json:"repeated_ids"`
	IdentityReuse      int64        `json:"identity_reuse"`
	KeysWithSeveralIDs int64        `json:"keys_with_several_ids"`
	MarkedRedelivered  int64        `json:"marked_redelivered"` // records the broker marked as redeliveries
	BadRecords         int64        `json:"bad_records"`
	ReuseExamples      []ReuseEx    `json:"identity_reuse_examples"`
	KeyExamples        []KeyExample `json:"keys_with_several_ids_examples"`
	// Counted says the ids and business keys above were counted: the
	// built-in replay's ledger counts them; a replay into a target
	// counts only the bad records it skipped, and its reports leave the
	// rest out.
	Counted bool `json:"-"`
}

// ReuseEx is an id delivered with a different payload: where first, and where changed.
type ReuseEx struct {
	ID    string `json:"id"`
	First string `json:"first"`
	Then  string `json:"then"`
	// ThenAt is Then as a place, for annotations.
	ThenAt consumer.Location `json:"-"`
}

// KeyExample is a business key seen under several ids.
type KeyExample struct {
	Key   string `json:"key"`
	IDs   int64  `json:"ids"`
	First string `json:"first"`
	Some  string `json:"some_ids"`
	// FirstAt is First as a place, for annotations.
	FirstAt consumer.Location `json:"-"`
}

// Injected counts what --seed injected.
type Injected struct {
	Redelivered int64 `json:"redelivered"` // crashes after commit, before the ack, redelivered
	Crashed     int64 `json:"crashed"`     // crashes mid-transaction, retried
	Rebalances  int64 `json:"rebalances"`
	Rewound     int64 `json:"rewound"` // deliveries re-delivered by rebalances
	Republished int64 `json:"republished"`
	Concurrent  int64 `json:"concurrent"`
}

// Outcomes counts what the handler returned.
type Outcomes struct {
	Processed int64 `json:"processed"`
	Duplicate int64 `json:"duplicate"`
	Conflict  int64 `json:"conflict"`
	Failed    int64 `json:"failed"`
	Crashed   int64 `json:"crashed"`
}

// Violation is one broken invariant of a replay.
type Violation struct {
	Invariant string    `json:"invariant"`
	Count     int64     `json:"count"`
	Examples  []Example `json:"examples"`
}

// Example is one instance of a broken invariant.
type Example struct {
	Event  string `json:"event,omitempty"`
	Key    string `json:"key,omitempty"` // the business key, for duplicate-key
	Detail string `json:"detail"`
	// At are the first capture lines that delivered the event (or, for
	// duplicate-key, the key); empty when the capture does not hold it.
	At []Place `json:"at"`
	// Pattern is the diagnosis of a replay into a target's breach, from
	// the statements of its event's delivery killed at a statement
	// (pkg/diagnose): a pattern, or not-recognised; absent when no such
	// trace was kept.
	Pattern string `json:"pattern,omitempty"`
}

// Unexpected counts the deliveries that failed without an injected fault.
type Unexpected struct {
	Count    int64            `json:"count"`
	Examples []FailureExample `json:"examples"`
}

// FailureExample is one delivery that failed without an injected fault.
type FailureExample struct {
	Event string `json:"event"`
	At    Place  `json:"at"`
	Error string `json:"error"`

	order int64 // the delivery's place in the replay (step.order)
}

// Passed reports whether the verdict is pass.
func (r *Report) Passed() bool { return r.Verdict == invariant.Pass }

func newReport(o Options, resumed bool, before int64) *Report {
	store := "SQLite in memory"
	if o.DB != "" && o.DB != ledger.Memory {
		store = "SQLite file " + o.DB
	}
	r := &Report{Seed: o.Seed, Strategy: o.Handler.Strategy, Store: store, Resumed: resumed,
		Invariants: []InvariantCheck{}, Violations: []Violation{}, FailOn: append([]Finding{}, o.FailOn...), FailedOn: []Finding{}, Inputs: []Input{}}
	for _, inv := range Checked(o.Handler.Strategy) {
		r.Invariants = append(r.Invariants, InvariantCheck{Name: string(inv.Name), Description: inv.Meaning})
	}
	r.Outcomes = &Outcomes{}
	r.Capture.ReuseExamples, r.Capture.KeyExamples = []ReuseEx{}, []KeyExample{}
	r.Capture.Counted = true
	r.Unexpected = &Unexpected{Examples: []FailureExample{}}
	r.Strategies = []StrategyRow{}
	r.examples = o.Examples
	if r.examples <= 0 {
		r.examples = 5
	}
	return r
}

// Unfinished is the report of a replay that stopped before it had one (bad
// input, a database error): what it was asked to do, nothing counted, and
// verdict "error"; no invariant is listed, since none was checked. The
// captures' formats are as --input gave them ("auto"
// when they were to be detected). Each consumer says what else it holds
// (Consumer.Unfinished).
func Unfinished(o Options) *Report {
	return o.consumer().Unfinished(&o)
}

// unfinished is the built-in replay's Unfinished.
func unfinished(o Options) *Report {
	if o.Handler.Strategy == "" {
		o.Handler.Strategy = handler.EventID
	}
	r := newReport(o, false, 0)
	r.Invariants = []InvariantCheck{} // none was checked
	format := o.Capture.Format
	if format == "" {
		format = capture.Auto
	}
	for _, in := range o.Inputs {
		name := in
		if in == "-" {
			name = "stdin"
		}
		r.Inputs = append(r.Inputs, Input{File: name, Format: string(format)})
	}
	r.Verdict = invariant.Error
	return r
}

func (r *Report) count(s step) {
	c := &r.Counters
	c.Deliveries++
	if s.d.Attempt > 1 {
		c.Redeliveries++
	}
	switch s.res.Outcome {
	case consumer.Processed:
		r.Outcomes.Processed++
		c.Processed++
		c.Effects++
		r.Over.Add(s.pos-1, 0, false)
	case consumer.Duplicate:
		r.Outcomes.Duplicate++
		c.Duplicates++
		r.Over.Add(s.pos-1, 1, false)
	case consumer.Conflict:
		r.Outcomes.Conflict++
		c.Conflicts++
		r.Over.Add(s.pos-1, 2, false)
	case consumer.Failed:
		r.Outcomes.Failed++
		c.Failed++
		var inj *handler.InjectedError
		injected := errors.As(s.res.Err, &inj)
		if !injected {
			r.Unexpected.Count++
			if len(r.Unexpected.Examples) < r.examples {
				r.Unexpected.Examples = append(r.Unexpected.Examples, FailureExample{Event: s.d.EventID, At: Place(s.d.At), Error: r.errorText(s.res.Err), order: s.order})
			}
		}
		// An injected failure is a crash mid-transaction.
		r.Over.Add(s.pos-1, 3, injected)
	case consumer.Crashed:
		r.Outcomes.Crashed++
		c.Crashed++
		c.Effects++
		r.Over.Add(s.pos-1, 4, true)
	}
}

func (r *Report) setCapture(f ledger.CaptureFindings) {
	c := &r.Capture
	c.Deliveries, c.DistinctIDs, c.RepeatedIDs = f.Deliveries, f.DistinctIDs, f.RepeatedIDs
	c.IdentityReuse, c.KeysWithSeveralIDs = f.IdentityReuse, f.KeysWithSeveralIDs
	c.ReuseExamples = []ReuseEx{}
	c.KeyExamples = []KeyExample{}
	for _, x := range f.Reuse {
		c.ReuseExamples = append(c.ReuseExamples, ReuseEx{ID: x.EventID, First: x.First.String(), Then: x.Then.String(), ThenAt: x.Then})
	}
	for _, k := range f.Keys {
		c.KeyExamples = append(c.KeyExamples, KeyExample{Key: k.Key, IDs: k.IDs, First: k.First.String(), Some: k.Some, FirstAt: k.First})
	}
	// The capture's own repeats are redeliveries too, beside the injected ones.
	r.Counters.Redeliveries += int(f.Deliveries - f.DistinctIDs)
}

// keyedInvariants adds invariant 2 to the list checked when the capture
// gave business keys to a strategy that does not dedup on them.
func (r *Report) keyedInvariants() {
	if r.keyed == 0 || r.Strategy.UsesKey() {
		return
	}
	inv := invariant.DuplicateKey
	r.Invariants = append(r.Invariants[:1], append([]InvariantCheck{{Name: string(inv.Name), Description: inv.Meaning}}, r.Invariants[1:]...)...)
}

func (r *Report) setViolations(broken []ledger.Broken) {
	for _, b := range broken {
		v := Violation{Invariant: string(b.Invariant), Count: b.Count, Examples: []Example{}}
		for i, x := range b.Examples {
			ex := Example{Event: x.EventID, Detail: x.Detail, At: []Place{}}
			if b.Invariant == invariant.DuplicateKey.Name && i < len(b.Keys) {
				ex.Key = b.Keys[i]
			}
			v.Examples = append(v.Examples, ex)
		}
		r.Violations = append(r.Violations, v)
		for i := range r.Invariants {
			if r.Invariants[i].Name == v.Invariant {
				r.Invariants[i].Broken = v.Count
			}
		}
	}
}

// republishedSuffix ends the id of an event republished under a new
// transport id; the capture holds it under the id before it.
const republishedSuffix = "~republish-"

// locate fills in the capture lines behind each example of a broken
// invariant, up to three each, so reports can point at them.
func (r *Report) locate(ctx context.Context, log ledger.CaptureLog) error {
	var ids, keys []string
	for _, v := range r.Violations {
		for _, x := range v.Examples {
			if x.Event != "" {
				id, _, _ := strings.Cut(x.Event, republishedSuffix)
				ids = append(ids, id)
			}
			if x.Key != "" {
				keys = append(keys, x.Key)
			}
		}
	}
	if len(ids)+len(keys) == 0 {
		return nil
	}
	byID, byKey, err := log.Where(ctx, ids, keys, 3)
	if err != nil {
		return err
	}
	for _, v := range r.Violations {
		for i := range v.Examples {
			x := &v.Examples[i]
			at := byKey[x.Key]
			if x.Event != "" {
				id, _, _ := strings.Cut(x.Event, republishedSuffix)
				at = byID[id]
			}
			for _, l := range at {
				x.At = append(x.At, Place(l))
			}
		}
	}
	return nil
}

func (r *Report) decide(failOn []Finding) {
	r.FailOnFindings(failOn)
	r.Verdict = invariant.Pass
	if len(r.Violations) > 0 || len(r.FailedOn) > 0 || r.Unexpected != nil && r.Unexpected.Count > 0 {
		r.Verdict = invariant.Fail
	}
}

// FailOnFindings adds to FailedOn the findings of failOn the capture
// holds (by r.Capture), and fails the verdict when it holds one: --fail-on,
// as both replays apply it.
func (r *Report) FailOnFindings(failOn []Finding) {
	c := r.Capture
	for _, f := range failOn {
		var n int64
		switch f {
		case IdentityReuse:
			n = c.IdentityReuse
		case RepeatedIDs:
			n = c.RepeatedIDs
		case KeysWithSeveralIDs:
			n = c.KeysWithSeveralIDs
		case BadRecords:
			n = c.BadRecords
		}
		if n > 0 {
			r.FailedOn = append(r.FailedOn, f)
		}
	}
	if len(r.FailedOn) > 0 {
		r.Verdict = invariant.Fail
	}
}

// ParseFinding reads a --fail-on value.
func ParseFinding(s string) (Finding, error) {
	for _, f := range Findings {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(Findings))
	for i, f := range Findings {
		names[i] = string(f)
	}
	return "", problem.Usagef("unknown --fail-on %q; expected one of %s", s, strings.Join(names, ", "))
}

// errorText is the reason a delivery failed, in one line, in the words of
// the replay's flags.
func (r *Report) errorText(err error) string {
	if err == nil {
		return "failed without an error"
	}
	var ke *handler.KeyError
	if errors.As(err, &ke) && ke.Template == businessKeyTemplate.String() {
		return fmt.Sprintf("strategy %s needs a business key and the record gives none; name the field that holds it with --key PATH", r.Strategy)
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
