// Package ledger is what a replay needs from the store it replays into:
// a group-commit handler store, a log of what the capture held, and the
// invariants judged over the stored rows. The replay engine depends on
// these interfaces only; pkg/sqlite implements them, and a reader of a
// user's own effect table (PostgreSQL, MySQL/MariaDB, a SQLite file)
// implements Judge the same way.
//
// Of this module it imports only pkg/consumer, pkg/handler and
// pkg/invariant, and it links no database driver or broker client.
package ledger

import (
	"context"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// Memory names the in-memory store, as --db writes it.
const Memory = ":memory:"

// Judge reads what a store holds after the deliveries and names the
// invariants it breaks, with the guard g (a strategy; nil for a user's
// consumer), counting every breach and keeping up to limit examples each.
type Judge interface {
	Invariants(ctx context.Context, g invariant.Guard, limit int) ([]Broken, error)
	// CountEffects is how many rows the effect table holds.
	CountEffects(ctx context.Context) (int64, error)
}

// Ledger is a store a capture is replayed into.
type Ledger interface {
	Judge
	// Resumed reports whether the store held an earlier replay, which this
	// one continues.
	Resumed() bool
	// Run calls f with the group-commit store, batch deliveries to a
	// commit, and commits what f left open.
	Run(ctx context.Context, batch int, f func(Batch) error) error
	// CaptureLog starts an empty log of what the capture holds, written
	// through Batch.RecordRows and RecordFile.
	CaptureLog(ctx context.Context) (CaptureLog, error)
	// KeyedInvariants is Judge.Invariants for a capture that gave business
	// keys: one effect per key is checked whatever the strategy.
	KeyedInvariants(ctx context.Context, g invariant.Guard, limit int) ([]Broken, error)
	// KeyStats counts the business keys the effects carry, the most effects
	// one key has, and how many keys have more than one.
	KeyStats(ctx context.Context) (keys, most, several int64, err error)
	Close() error
}

// Opener opens the ledger at path (Memory, or a file) for a replay with cfg.
type Opener func(ctx context.Context, path string, cfg handler.Config) (Ledger, error)

// Split is a ledger that keeps nothing and handles the deliveries in parts
// side by side, each part a store of its own: the replay puts every
// delivery of an event id in the same part. Its counts and invariants are
// over all parts, with the effect ids one store would have given.
type Split interface {
	Ledger
	// Parts is how many parts the deliveries are handled in.
	Parts() int
	// RunParts calls f for every part, each on a goroutine of its own,
	// and returns when all have returned; the first error cancels the
	// context the others were given.
	RunParts(ctx context.Context, f func(ctx context.Context, part int, s OrderedStore) error) error
	// Recorder writes the capture log CaptureLog made.
	Recorder
}

// OrderedStore is the store of one part of a Split ledger. SetOrder names
// the place of the next delivery in the whole replay, which the effect it
// writes, if any, is numbered by.
type OrderedStore interface {
	handler.Store
	SetOrder(at int64)
}

// SplitOpener opens a Split ledger in parts parts for a replay with cfg.
type SplitOpener func(ctx context.Context, cfg handler.Config, parts int) (Split, error)

// Batch is the group-commit store deliveries run through; between
// deliveries it also records the capture.
type Batch interface {
	handler.Store
	Recorder
}

// Recorder writes the capture log.
type Recorder interface {
	// RecordRows writes deliveries of the capture into the log, in order.
	RecordRows(rows []CaptureRow) error
	// RecordFile names capture file number n.
	RecordFile(n int, name string) error
}

// CaptureLog answers what the capture itself holds.
type CaptureLog interface {
	Findings(ctx context.Context, limit int) (CaptureFindings, error)
	// Where finds the capture lines of the ids and business keys, up to
	// limit each.
	Where(ctx context.Context, ids, keys []string, limit int) (byID, byKey map[string][]consumer.Location, err error)
	// List calls each with every entry behind the findings, not only the
	// examples: each repeated id, each reused id, each key under several
	// ids, in order of first appearance within each.
	List(ctx context.Context, each func(Listed) error) error
	Close() error
}

// The findings List gives entries of.
const (
	ListedRepeatedID    = "repeated-ids"
	ListedIdentityReuse = "identity-reuse"
	ListedKeyIDs        = "keys-with-several-ids"
)

// Listed is one entry behind a capture finding.
type Listed struct {
	Finding    string // ListedRepeatedID, ListedIdentityReuse or ListedKeyIDs
	ID         string // the id (repeated, reused)
	Key        string // the business key (several ids)
	Deliveries int64  // how many deliveries carry the id (repeated)
	IDs        []string
	First      consumer.Location // where the id or key first appears
	Then       consumer.Location // reused: the first delivery with another payload
}

// Broken is one invariant a replay broke: how many times, and the first few.
type Broken struct {
	Invariant invariant.Name
	Count     int64
	Examples  []invariant.Violation
	// Keys are the business keys of the examples, where the breach is
	// about a key.
	Keys []string
}

// CaptureRow is one delivery of the capture, as the capture log keeps it.
type CaptureRow struct {
	EventID    string
	Identity   int64 // a hash of the identity the handler compares
	Key        string
	File, Line int
}

// CaptureFindings are what the capture itself holds, before any handler ran.
type CaptureFindings struct {
	Deliveries         int64
	DistinctIDs        int64
	RepeatedIDs        int64 // ids delivered more than once
	IdentityReuse      int64 // ids delivered with more than one payload identity
	KeysWithSeveralIDs int64 // business keys seen under more than one id
	Reuse              []Reuse
	Keys               []KeyIDs
}

// Reuse is an id delivered with a different payload than the first time.
type Reuse struct {
	EventID     string
	First, Then consumer.Location
}

// KeyIDs is a business key seen under several ids.
type KeyIDs struct {
	Key   string
	IDs   int64
	First consumer.Location
	Some  string // the first few ids
}
