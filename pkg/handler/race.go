package handler

import (
	"context"
	"errors"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// markRaced ends a race lost to another event id with the same business
// key (the effect's UNIQUE(business_key) refused this one): this event id
// is marked, as a duplicate under a new id is when nothing races, and the
// winner's effect is returned. A refusal of the marker means a worker with
// this same id marked it already.
func (w *work) markRaced(ctx context.Context, tx Tx, id int64, ev string, failed consumer.Result) consumer.Result {
	m := Marker{EventID: w.d.EventID, Consumer: w.consumer, Identity: w.identity, BusinessKey: w.key, At: w.h.now()}
	if err := tx.InsertMarker(ctx, m); err == nil {
		if err := tx.Commit(); err != nil {
			return failed
		}
	} else if !errors.Is(err, ErrUnique) {
		return failed
	}
	return consumer.Result{Outcome: consumer.Duplicate, EffectID: id, DuplicateOf: ev, Key: w.key}
}
