package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

// TestSnapshotRestore: after a restore the database holds exactly what it
// held at the snapshot — the same markers in the same order, the same
// effects — and the next effect gets the id it would have got then, however
// often it is restored; the snapshot is not part of the database.
func TestSnapshotRestore(t *testing.T) {
	ctx := context.Background()
	for _, path := range []string{Memory, filepath.Join(t.TempDir(), "run.db")} {
		for _, strategy := range []handler.Strategy{handler.EventID, handler.CheckThenAct, handler.BusinessKey} {
			t.Run(fmt.Sprintf("%s/%s", filepath.Base(path), strategy), func(t *testing.T) {
				db, err := Create(ctx, path, handler.Config{Strategy: strategy, Consumer: "c", Effect: "shipments"})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				write := func(event string) int64 {
					t.Helper()
					tx, err := db.Begin(ctx)
					if err != nil {
						t.Fatal(err)
					}
					at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
					if err := tx.InsertMarker(ctx, handler.Marker{EventID: event, Consumer: "c", Identity: "i-" + event, BusinessKey: "k-" + event, At: at}); err != nil {
						t.Fatal(err)
					}
					id, err := tx.InsertEffect(ctx, handler.Effect{EventID: event, Consumer: "c", BusinessKey: "k-" + event, Payload: "{}", At: at})
					if err != nil {
						t.Fatal(err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
					return id
				}
				state := func() ([]handler.Marker, []handler.Effect) {
					t.Helper()
					ms, err := db.Markers(ctx)
					if err != nil {
						t.Fatal(err)
					}
					es, err := db.Effects(ctx)
					if err != nil {
						t.Fatal(err)
					}
					return ms, es
				}
				write("b")
				write("a")
				wantMarkers, wantEffects := state()
				restore, release, err := db.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				next := write("c")
				for round := 1; round <= 2; round++ {
					write(fmt.Sprint("d", round))
					write(fmt.Sprint("e", round))
					if err := restore(ctx); err != nil {
						t.Fatal(err)
					}
					ms, es := state()
					if !reflect.DeepEqual(ms, wantMarkers) || !reflect.DeepEqual(es, wantEffects) {
						t.Fatalf("round %d: restored\n%v\n%v\nwant\n%v\n%v", round, ms, es, wantMarkers, wantEffects)
					}
					if id := write("c"); id != next {
						t.Errorf("round %d: the next effect got id %d after the restore, want %d", round, id, next)
					}
					if err := restore(ctx); err != nil {
						t.Fatal(err)
					}
				}
				release()
				var n int
				if err := db.anchor.QueryRowContext(ctx, `SELECT count(*) FROM pragma_database_list`).Scan(&n); err != nil || n != 1 {
					t.Errorf("after release the connection has %d databases (%v), want 1", n, err)
				}
			})
		}
	}
}
