package sqlite

import (
	"context"
	"fmt"
	"testing"

	"github.com/redeliver/redeliver/pkg/handler"
)

// TestWhere finds the capture lines of the ids and keys asked for, in
// capture order, at most limit each, and nothing for the others.
func TestWhere(t *testing.T) {
	ctx := context.Background()
	log, err := OpenCaptureLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	rows := []struct {
		id, key    string
		file, line int
	}{
		{"a", "k1", 1, 1}, {"b", "k2", 1, 2}, {"a", "k1", 1, 3}, {"c", "k1", 2, 1}, {"a", "k1", 2, 2}, {"a", "", 2, 3},
	}
	err = log.Write(func(w *CaptureWriter) error {
		for n, name := range []string{"one.ndjson", "two.ndjson"} {
			if err := w.RecordFile(n+1, name); err != nil {
				return err
			}
		}
		for _, r := range rows {
			if err := w.Record(r.id, 0, r.key, r.file, r.line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	byID, byKey, err := log.Where(ctx, []string{"a", "missing"}, []string{"k1"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	str := func(ls []handler.Location) string { return fmt.Sprint(ls) }
	tests := []struct {
		name string
		got  []handler.Location
		want []handler.Location
	}{
		{"id a", byID["a"], []handler.Location{{File: "one.ndjson", Line: 1}, {File: "one.ndjson", Line: 3}, {File: "two.ndjson", Line: 2}}},
		{"key k1", byKey["k1"], []handler.Location{{File: "one.ndjson", Line: 1}, {File: "one.ndjson", Line: 3}, {File: "two.ndjson", Line: 1}}},
		{"id not in the capture", byID["missing"], nil},
		{"id not asked for", byID["b"], nil},
	}
	for _, tt := range tests {
		if str(tt.got) != str(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}
