package replay

import (
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// Report is everything a replay found; the JSON form is documented in README.
type Report struct {
	Inputs   []input          `json:"inputs"`
	Seed     int64            `json:"seed"`
	Strategy handler.Strategy `json:"strategy"`
	Store    string           `json:"store"`
	Capture  CaptureReport    `json:"capture"`
	Injected Injected         `json:"injected"`
	Outcomes Outcomes         `json:"outcomes"`
	Counters runner.Counters  `json:"counters"`
	// Effects is how many effects the database holds after the replay;
	// NewEffects how many this replay added (zero when a finished replay is
	// replayed again on the same file).
	Effects    int64 `json:"effects"`
	NewEffects int64 `json:"new_effects"`
	Resumed    bool  `json:"resumed"`
	// Violations are the broken invariants, each with a count and examples.
	Violations []Violation `json:"violations"`
	// FailedOn lists the --fail-on findings the capture holds.
	FailedOn   []Finding `json:"failed_on"`
	Reproducer string    `json:"reproducer,omitempty"`
	// ReproducerSteps is how many deliveries the reproducer kept.
	ReproducerSteps int    `json:"reproducer_steps,omitempty"`
	Verdict         string `json:"verdict"` // "pass" or "fail"
}

type input struct {
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
}

// ReuseEx is an id delivered with a different payload: where first, and where changed.
type ReuseEx struct {
	ID    string `json:"id"`
	First string `json:"first"`
	Then  string `json:"then"`
}

// KeyExample is a business key seen under several ids.
type KeyExample struct {
	Key   string `json:"key"`
	IDs   int64  `json:"ids"`
	First string `json:"first"`
	Some  string `json:"some_ids"`
}

// Injected counts what the seed injected.
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
	Detail string `json:"detail"`
}

// Passed reports whether the verdict is pass.
func (r *Report) Passed() bool { return r.Verdict == "pass" }

func newReport(o Options, resumed bool, before int64) *Report {
	store := "SQLite in memory"
	if o.DB != "" && o.DB != sqlite.Memory {
		store = "SQLite file " + o.DB
	}
	return &Report{Seed: o.Seed, Strategy: o.Handler.Strategy, Store: store, Resumed: resumed,
		Violations: []Violation{}, FailedOn: []Finding{}, Inputs: []input{}}
}

func (r *Report) count(s step) {
	c := &r.Counters
	c.Deliveries++
	if s.d.Attempt > 1 {
		c.Redeliveries++
	}
	switch s.res.Outcome {
	case handler.Processed:
		r.Outcomes.Processed++
		c.Processed++
		c.Effects++
	case handler.Duplicate:
		r.Outcomes.Duplicate++
		c.Duplicates++
	case handler.Conflict:
		r.Outcomes.Conflict++
		c.Conflicts++
	case handler.Failed:
		r.Outcomes.Failed++
		c.Failed++
	case handler.Crashed:
		r.Outcomes.Crashed++
		c.Crashed++
		c.Effects++
	}
}

func (r *Report) setCapture(f sqlite.CaptureFindings) {
	c := &r.Capture
	c.Deliveries, c.DistinctIDs, c.RepeatedIDs = f.Deliveries, f.DistinctIDs, f.RepeatedIDs
	c.IdentityReuse, c.KeysWithSeveralIDs = f.IdentityReuse, f.KeysWithSeveralIDs
	c.ReuseExamples = []ReuseEx{}
	c.KeyExamples = []KeyExample{}
	for _, x := range f.Reuse {
		c.ReuseExamples = append(c.ReuseExamples, ReuseEx{ID: x.EventID, First: x.First.String(), Then: x.Then.String()})
	}
	for _, k := range f.Keys {
		c.KeyExamples = append(c.KeyExamples, KeyExample{Key: k.Key, IDs: k.IDs, First: k.First.String(), Some: k.Some})
	}
	// The capture's own repeats are redeliveries too, beside the injected ones.
	r.Counters.Redeliveries += int(f.Deliveries - f.DistinctIDs)
}

func (r *Report) setViolations(broken []sqlite.Broken) {
	for _, b := range broken {
		v := Violation{Invariant: string(b.Invariant), Count: b.Count, Examples: []Example{}}
		for _, x := range b.Examples {
			v.Examples = append(v.Examples, Example{Event: x.EventID, Detail: x.Detail})
		}
		r.Violations = append(r.Violations, v)
	}
}

func (r *Report) decide(failOn []Finding) {
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
	r.Verdict = "pass"
	if len(r.Violations) > 0 || len(r.FailedOn) > 0 {
		r.Verdict = "fail"
	}
}

// ParseFinding reads a --fail-on value.
func ParseFinding(s string) (Finding, error) {
	for _, f := range Findings {
		if string(f) == s {
			return f, nil
		}
	}
	return "", inputf("unknown --fail-on %q; expected one of identity-reuse, repeated-ids, keys-with-several-ids, bad-records", s)
}
