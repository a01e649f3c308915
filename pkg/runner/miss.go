package runner

// MissKind is what kind of expectation did not hold.
type MissKind int

// The kinds of miss, each with the fields of Miss it sets. Where is the
// step (Step, and N of Of for a delivery of a step repeated with times).
const (
	// A delivery's outcome or answer: where, Want, Got, Said.
	MissOutcome MissKind = iota + 1
	// An HTTP status: where, WantN, GotN (0: none came), Said.
	MissStatus
	// An error containing Want: where, Got the error, Flag whether the
	// delivery failed at all.
	MissError
	// The effect of the delivery labelled What: where, WantN, GotN.
	MissSameEffect
	// WantN rows in table What: where, GotN.
	MissRows
	// WantN effect rows for Key: where, GotN.
	MissKeyRows
	// WantN effects at external What for Key: where, GotN.
	MissExternalEffects
	// Event (of Consumer) marked processed (Flag) or not: where.
	MissMarked
	// WantN charges at the gateway: where, GotN.
	MissCharges
	// Exactly the violations Wants; Gots broke.
	MissViolations
	// None of WantN schedules raced a concurrent step's copies.
	MissNeverRaced
	// The fault What met no external call: Calls the calls the delivery
	// made, Said how the consumer answered.
	MissCallNotReached
	// The fault What met no statement boundary: Lines the statements the
	// delivery ran, Said how the consumer answered.
	MissNotReached
	// The delivery of Event ran no statement through URL; Flag: its
	// effect rows changed all the same.
	MissBypassed
	// The delivery of Event changed the effect rows while what it ran
	// through URL (Lines) only read.
	MissWrotePast
	// Behind a broker, the fault What found no statement of the delivery
	// of Event (Key) among those through URL (Lines).
	MissUntied
)

// A Miss is an expectation that did not hold, as facts: its kind, where
// it was checked, and the values it compared. No runner or system words
// it: pkg/report does, with what was expected and what came as the
// structured reports carry them, so one expectation reads the same from
// every kind of consumer.
type Miss struct {
	Kind        MissKind
	Step, N, Of int
	Want, Got   string
	WantN, GotN int64
	Said        string
	What        string
	Event, Key  string
	Consumer    string
	URL         string
	Calls       string
	Lines       []string
	Wants, Gots []string
	Flag        bool
}
