package sqlite

import (
	"context"
	"errors"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/ledger"
	"github.com/redeliver/redeliver/pkg/problem"
)

// The capture log's and the replay's types are the ledger's.
type (
	// Broken is one invariant a replay broke.
	Broken = ledger.Broken
	// CaptureRow is one delivery of the capture.
	CaptureRow = ledger.CaptureRow
	// CaptureFindings are what the capture itself holds.
	CaptureFindings = ledger.CaptureFindings
	// Reuse is an id delivered with a different payload.
	Reuse = ledger.Reuse
	// KeyIDs is a business key seen under several ids.
	KeyIDs = ledger.KeyIDs
)

// OpenLedger opens path for a replay with cfg as a ledger.Ledger. A file
// redeliver did not make, or made for another handler, is invalid input.
func OpenLedger(ctx context.Context, path string, cfg handler.Config) (ledger.Ledger, error) {
	r, err := OpenReplay(ctx, path, cfg)
	if errors.Is(err, ErrNotOurs) || errors.Is(err, ErrMismatch) || errors.Is(err, ErrNotRegular) || errors.Is(err, ErrBadPath) {
		return nil, &problem.Error{Kind: problem.InvalidInput, Msg: err.Error(), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return replayLedger{r}, nil
}

// replayLedger is a ReplayDB as the replay engine sees it.
type replayLedger struct{ *ReplayDB }

func (l replayLedger) Resumed() bool { return l.ReplayDB.Resumed }

func (l replayLedger) Run(ctx context.Context, batch int, f func(ledger.Batch) error) error {
	return l.ReplayDB.Run(ctx, batch, func(b *Batch) error { return f(b) })
}

func (l replayLedger) CaptureLog(ctx context.Context) (ledger.CaptureLog, error) {
	c, err := l.ReplayDB.CaptureLog(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (l replayLedger) Invariants(ctx context.Context, g invariant.Guard, limit int) ([]ledger.Broken, error) {
	return l.ReplayDB.Invariants(ctx, g, limit)
}

// OpenSplitLedger opens a replay that keeps nothing in parts, as a
// ledger.Split.
func OpenSplitLedger(ctx context.Context, cfg handler.Config, parts int) (ledger.Split, error) {
	s, err := OpenSplit(ctx, cfg, parts)
	if err != nil {
		return nil, err
	}
	return splitLedger{s}, nil
}

// splitLedger is a SplitDB as the replay engine sees it.
type splitLedger struct{ *SplitDB }

func (splitLedger) Resumed() bool { return false }

func (splitLedger) Run(context.Context, int, func(ledger.Batch) error) error {
	return errors.New("a split replay runs its parts with RunParts")
}

func (l splitLedger) RunParts(ctx context.Context, f func(ctx context.Context, part int, s ledger.OrderedStore) error) error {
	return l.SplitDB.RunParts(ctx, func(ctx context.Context, part int, b *Batch) error { return f(ctx, part, b) })
}

func (l splitLedger) CaptureLog(ctx context.Context) (ledger.CaptureLog, error) {
	c, err := l.SplitDB.CaptureLog(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}
