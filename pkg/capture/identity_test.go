package capture

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestEventKeysAreUnambiguous: two different events never get one key,
// and what cannot be told apart is refused.
func TestEventKeysAreUnambiguous(t *testing.T) {
	tests := []struct {
		name string
		a, b string // two records that are different events
	}{
		{"a slash moved between source and id",
			`{"specversion":"1.0","source":"/a","id":"b/c","type":"t","data":{}}`,
			`{"specversion":"1.0","source":"/a/b","id":"c","type":"t","data":{}}`},
		{"a trailing slash on the source",
			`{"specversion":"1.0","source":"/a/","id":"b","type":"t","data":{}}`,
			`{"specversion":"1.0","source":"/a","id":"b","type":"t","data":{}}`},
		{"no source against a source",
			`{"specversion":"1.0","id":"a/b","type":"t","data":{}}`,
			`{"specversion":"1.0","source":"a","id":"b","type":"t","data":{}}`},
		{"an escaped slash against a slash",
			`{"specversion":"1.0","source":"/a","id":"b%2Fc","type":"t","data":{}}`,
			`{"specversion":"1.0","source":"/a","id":"b/c","type":"t","data":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, evs, bad, err := readAll(t, "c.ndjson", strings.NewReader(tt.a+"\n"+tt.b+"\n"), Options{Format: CloudEvents})
			if err != nil || len(bad) != 0 || len(evs) != 2 {
				t.Fatalf("events %d, bad %v, err %v", len(evs), bad, err)
			}
			if evs[0].ID == evs[1].ID {
				t.Errorf("both events have the key %q", evs[0].ID)
			}
		})
	}
}

func TestAmbiguousRecordsAreRefused(t *testing.T) {
	tests := []struct {
		name, rec, format, reason string
	}{
		{"lone high surrogate in the id", `{"specversion":"1.0","source":"/s","id":"a\ud800","type":"t","data":{}}`, "cloudevents", "lone UTF-16 surrogate"},
		{"lone low surrogate in the id", `{"specversion":"1.0","source":"/s","id":"a\udbff","type":"t","data":{}}`, "cloudevents", "lone UTF-16 surrogate"},
		{"id given twice", `{"specversion":"1.0","source":"/s","id":"a","id":"b","type":"t","data":{}}`, "cloudevents", `names "id" twice`},
		{"data given twice", `{"specversion":"1.0","source":"/s","id":"a","type":"t","data":{"n":1},"data":{"n":2}}`, "cloudevents", `names "data" twice`},
		{"plain: id given twice", `{"k":"a","k":"b"}`, "ndjson", `names "k" twice`},
		{"plain: lone surrogate", `{"k":"x\udc00"}`, "ndjson", "lone UTF-16 surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFormat(tt.format)
			if err != nil {
				t.Fatal(err)
			}
			_, evs, bad, err := readAll(t, "c.ndjson", strings.NewReader(tt.rec+"\n"), Options{Format: f, ID: "k"})
			if err != nil || len(evs) != 0 || len(bad) != 1 || !strings.Contains(bad[0].Reason, tt.reason) {
				t.Fatalf("events %v, bad %v, err %v; want one bad record saying %q", evs, bad, err, tt.reason)
			}
		})
	}
	// A surrogate pair is a character, and two of them stay apart.
	_, evs, bad, err := readAll(t, "c.ndjson", strings.NewReader(`{"k":"\ud83d\ude00"}`+"\n"+`{"k":"\ud83d\ude01"}`+"\n"), Options{Format: NDJSON, ID: "k"})
	if err != nil || len(bad) != 0 || len(evs) != 2 || evs[0].ID == evs[1].ID {
		t.Fatalf("surrogate pairs: events %v, bad %v, err %v", evs, bad, err)
	}
}

// TestDamagedGzipNamesItsLine: a gzip capture cut off or corrupted is bad
// input at the line where it breaks, not an error without a place.
func TestDamagedGzipNamesItsLine(t *testing.T) {
	var plain strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&plain, `{"specversion":"1.0","id":"e%d","source":"/s","type":"t","data":{"n":%d,"pad":"%x"}}`+"\n", i, i, i*7919)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(plain.String()))
	w.Close()
	for _, cut := range []int{40, gz.Len() / 2, gz.Len() - 4} {
		_, _, bad, err := readAll(t, "c.ndjson.gz", bytes.NewReader(gz.Bytes()[:cut]), Options{})
		if err == nil && len(bad) == 1 && bad[0].Fatal && bad[0].At.Line > 0 && strings.Contains(bad[0].Reason, "cut off") {
			continue
		}
		var be *BadRecordError
		if errors.As(err, &be) && be.At.Line > 0 {
			continue
		}
		t.Errorf("cut at %d of %d bytes: bad %v, err %v; want a bad record with a line", cut, gz.Len(), bad, err)
	}
}

func TestLongIDsAreBadRecords(t *testing.T) {
	rec := `{"specversion":"1.0","id":"` + strings.Repeat("x", 1025) + `","type":"t","data":{}}`
	_, evs, bad, err := readAll(t, "c.ndjson", strings.NewReader(rec+"\n"), Options{Format: CloudEvents})
	if err != nil || len(evs) != 0 || len(bad) != 1 || !strings.Contains(bad[0].Reason, "ids are limited to 1024 bytes on every store") || bad[0].At.Line != 1 {
		t.Fatalf("events %d, bad %v, err %v", len(evs), bad, err)
	}
}
