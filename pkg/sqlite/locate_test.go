package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

// TestWhere finds the capture lines of the ids and keys asked for, in
// capture order, at most limit each, and nothing for the others.
func TestWhere(t *testing.T) {
	ctx := context.Background()
	cfg := handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"}
	db := openReplayT(t, filepath.Join(t.TempDir(), "replay.db"), cfg)
	log, err := db.CaptureLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	rows := []CaptureRow{
		{EventID: "a", Key: "k1", File: 1, Line: 1}, {EventID: "b", Key: "k2", File: 1, Line: 2}, {EventID: "a", Key: "k1", File: 1, Line: 3},
		{EventID: "c", Key: "k1", File: 2, Line: 1}, {EventID: "a", Key: "k1", File: 2, Line: 2}, {EventID: "a", File: 2, Line: 3},
	}
	err = db.Run(ctx, 7, func(b *Batch) error {
		for n, name := range []string{"one.ndjson", "two.ndjson"} {
			if err := b.RecordFile(n+1, name); err != nil {
				return err
			}
		}
		return b.RecordRows(rows)
	})
	if err != nil {
		t.Fatal(err)
	}
	byID, byKey, err := log.Where(ctx, []string{"a", "missing"}, []string{"k1"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	str := func(ls []consumer.Location) string { return fmt.Sprint(ls) }
	tests := []struct {
		name string
		got  []consumer.Location
		want []consumer.Location
	}{
		{"id a", byID["a"], []consumer.Location{{File: "one.ndjson", Line: 1}, {File: "one.ndjson", Line: 3}, {File: "two.ndjson", Line: 2}}},
		{"key k1", byKey["k1"], []consumer.Location{{File: "one.ndjson", Line: 1}, {File: "one.ndjson", Line: 3}, {File: "two.ndjson", Line: 1}}},
		{"id not in the capture", byID["missing"], nil},
		{"id not asked for", byID["b"], nil},
	}
	for _, tt := range tests {
		if str(tt.got) != str(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
