package scenario

import (
	"strings"
	"testing"
)

// TestLoadTellsATargetFile: a file with a target and neither checks nor a
// handler is a --target file, checked as replay --target checks it; every
// other file without checks is a scenario missing them.
func TestLoadTellsATargetFile(t *testing.T) {
	const target = "target:\n  http: {url: \"http://127.0.0.1:1/e\"}\n"
	const effects = "effects: {db: r.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n"
	tests := []struct {
		name, src  string
		targetFile bool
		err        string
	}{
		{"target and effects", "version: 1\n" + target + effects, true, ""},
		{"with checks", "version: 1\n" + target + effects + "checks:\n  - name: c\n    steps:\n      - deliver: {id: e, data: {orderId: O-1}}\n", false, ""},
		{"a handler, no checks", "version: 1\nhandler: {strategy: event-id}\n", false, "1:1: checks is missing"},
		{"nothing", "version: 1\n", false, "1:1: checks is missing"},
		{"a target file's mistake", "version: 1\n" + target + "effects: {db: r.db, table: 1x, key: order_id, key_of: \"{data.orderId}\"}\n", false, "f.yaml:4:28: table must be a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load("f.yaml", []byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.TargetFile != tt.targetFile {
				t.Errorf("TargetFile = %v, want %v", s.TargetFile, tt.targetFile)
			}
		})
	}
}
