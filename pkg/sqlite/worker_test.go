package sqlite

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestWorkersShareTheDatabase: a worker's connection sees what the
// handler's own connection wrote, in memory as in a file, and two
// in-memory databases never see each other.
func TestWorkersShareTheDatabase(t *testing.T) {
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.EventID, Effect: "effects"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, path := range []string{Memory, filepath.Join(t.TempDir(), "w.db")} {
		t.Run(path, func(t *testing.T) {
			d, err := Create(ctx, path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			other, err := Create(ctx, Memory, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			w, err := d.Worker(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer w.(io.Closer).Close()
			tx, err := w.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.InsertMarker(ctx, handler.Marker{EventID: "evt-1", Consumer: "c", Identity: "{}", At: at}); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if n, err := d.Count(ctx, "processed"); err != nil || n != 1 {
				t.Errorf("the database holds %d markers (%v), want the worker's 1", n, err)
			}
			if n, err := other.Count(ctx, "processed"); err != nil || n != 0 {
				t.Errorf("another in-memory database holds %d markers (%v), want 0", n, err)
			}
		})
	}
}

// TestBusyIsAFailedDelivery: a worker that cannot get the write lock
// within the busy timeout gets handler.ErrBusy, which the handler reports
// as a failed delivery rather than a broken run. (It waits out the busy
// timeout once.)
func TestBusyIsAFailedDelivery(t *testing.T) {
	ctx := context.Background()
	d, err := Create(ctx, filepath.Join(t.TempDir(), "busy.db"), handler.Config{Strategy: handler.EventID, Effect: "effects"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	holder, err := d.Begin(ctx) // holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	w, err := d.Worker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.(io.Closer).Close()
	h := handler.New(handler.Config{Strategy: handler.EventID, Effect: "effects", Consumer: "c"}, w, nil, nil)
	res := h.Handle(ctx, consumer.Delivery{EventID: "evt-1", Envelope: []byte(`{"id":"evt-1","data":{}}`)}, nil)
	if res.Outcome != consumer.Failed || !errors.Is(res.Err, handler.ErrBusy) {
		t.Fatalf("Handle = %s (%v), want failed with handler.ErrBusy", res.Outcome, res.Err)
	}
	var se *handler.StoreError
	if errors.As(res.Err, &se) {
		t.Errorf("Handle error %v is a StoreError, which would end the run; want a failed delivery", res.Err)
	}
}
