package sqlite

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

func TestStoredTimesSortAsTimes(t *testing.T) {
	times := []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(10000, 2, 29, 0, 0, 0, 1, time.UTC),
		time.Date(99999, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(100000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1234567890, 6, 1, 0, 0, 0, 0, time.UTC),
	}
	var texts []string
	for _, tm := range times {
		s := formatTime(tm)
		back, err := parseTime(s)
		if err != nil || !back.Equal(tm) {
			t.Errorf("parseTime(formatTime(%v)) = %v, %v (text %q)", tm, back, err, s)
		}
		texts = append(texts, s)
	}
	if !sort.StringsAreSorted(texts) {
		t.Errorf("stored times do not sort as the times do: %q", texts)
	}
}

// TestRetentionAfterTheYear9999: a marker stored after the year 9999 is
// still purged once it is older than the retention.
func TestRetentionAfterTheYear9999(t *testing.T) {
	ctx := context.Background()
	db, err := Create(ctx, Memory, handler.Config{Strategy: handler.EventID, Consumer: "c", Effect: "effects"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.InsertMarker(ctx, handler.Marker{EventID: "e", Consumer: "c", Identity: "{}", At: old}); err != nil {
		t.Fatal(err)
	}
	if err := tx.PurgeMarkers(ctx, old.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Count(ctx, "processed"); n != 0 {
		t.Errorf("%d markers left; the one from the year 10000 is older than the cut-off and must be purged", n)
	}
}
