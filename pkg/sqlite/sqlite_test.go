package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

func TestCreateReplacesOnlyItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "shipments"}

	path := filepath.Join(dir, "run.db")
	db, err := Create(ctx, path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin(ctx)
	if _, err := tx.InsertEffect(ctx, handler.Effect{EventID: "e", Consumer: "c", Payload: "{}"}); err != nil {
		t.Fatal(err)
	}
	tx.Commit()
	db.Close()

	again, err := Create(ctx, path, cfg)
	if err != nil {
		t.Fatalf("re-create our own file: %v", err)
	}
	if n, _ := again.Count(ctx, "shipments"); n != 0 {
		t.Errorf("re-created database has %d rows, want a fresh one", n)
	}
	again.Close()

	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("keep me"), 0o644)
	if _, err := Create(ctx, notes, cfg); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("Create over a text file: %v, want ErrNotOurs", err)
	}
	if data, _ := os.ReadFile(notes); string(data) != "keep me" {
		t.Errorf("the text file was changed: %q", data)
	}
	if _, err := os.Stat(notes + "-wal"); err == nil {
		t.Error("a -wal file appeared beside the text file")
	}
}

func TestConstraintsPerStrategy(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		strategy           handler.Strategy
		markerTwice, twice bool // may the same marker / the same event's effect be inserted twice?
		keyTwice           bool
	}{
		{handler.EventID, false, false, true},
		{handler.BusinessKey, false, false, false},
		{handler.None, false, true, true},
		{handler.CheckThenAct, true, true, true},
		{handler.MarkerAfterEffect, false, true, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			db, err := Create(ctx, Memory, handler.Config{Strategy: tt.strategy, Consumer: "c", Effect: "effects"})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			try := func(f func(handler.Tx) error) bool {
				tx, err := db.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				err = f(tx)
				if err != nil && !errors.Is(err, handler.ErrUnique) {
					t.Fatalf("unexpected error: %v", err)
				}
				return err == nil
			}
			marker := func(tx handler.Tx) error {
				return tx.InsertMarker(ctx, handler.Marker{EventID: "e", Consumer: "c", Identity: "i"})
			}
			if got := try(func(tx handler.Tx) error { marker(tx); return marker(tx) }); got != tt.markerTwice {
				t.Errorf("second marker accepted = %v, want %v", got, tt.markerTwice)
			}
			effect := func(ev string) func(handler.Tx) error {
				return func(tx handler.Tx) error {
					_, err := tx.InsertEffect(ctx, handler.Effect{EventID: ev, Consumer: "c", BusinessKey: "k", Payload: "{}"})
					return err
				}
			}
			if got := try(func(tx handler.Tx) error { effect("e")(tx); return effect("e")(tx) }); got != tt.twice {
				t.Errorf("second effect for one event accepted = %v, want %v", got, tt.twice)
			}
			if got := try(func(tx handler.Tx) error { effect("e")(tx); return effect("f")(tx) }); got != tt.keyTwice {
				t.Errorf("second effect for one business key accepted = %v, want %v", got, tt.keyTwice)
			}
		})
	}
}

func TestValidTableName(t *testing.T) {
	for name, want := range map[string]bool{"shipments": true, "Order_2": true, "processed": false, "redeliver_meta": false, "a b": false, "1x": false, `x"`: false} {
		if got := ValidTableName(name); got != want {
			t.Errorf("ValidTableName(%q) = %v, want %v", name, got, want)
		}
	}
}
