package scenario

import (
	"strings"
	"testing"
)

// TestBinaryFilesNameTheirLine: a file that is not YAML text is refused at
// the line and column of its first bad byte.
func TestBinaryFilesNameTheirLine(t *testing.T) {
	tests := []struct{ src, want string }{
		{"version: 1\nchecks:\n  - name: a\xff\n", "s.yaml:3:12: byte 0xff is not UTF-8"},
		{"\x00\x01binary", "s.yaml:1:1: control character U+0000 is not allowed in YAML"},
		{"version: 1\nname: \"\tok\x1b[2J\"\n", "s.yaml:2:11: control character U+001B is not allowed in YAML"},
		{"version: 1\nname: caf\xc3\xa9\x7f\n", "s.yaml:2:11: control character U+007F is not allowed in YAML"},
	}
	for _, tt := range tests {
		_, err := Load("s.yaml", []byte(tt.src))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Load(%q) = %v, want %q…", tt.src, err, tt.want)
		}
	}
	if _, err := Load("s.yaml", []byte("\ufeffversion: 1\nchecks:\n  - name: tab\tand é\n    steps:\n      - deliver: {id: a, data: {}}\n")); err != nil {
		t.Errorf("a byte order mark, a tab and UTF-8 text: %v", err)
	}
}

// TestLongIDsAreRefusedOnEveryStore: one id limit, said at validation.
func TestLongIDsAreRefusedOnEveryStore(t *testing.T) {
	id := strings.Repeat("x", 1025)
	_, err := Load("s.yaml", []byte("version: 1\nchecks:\n  - name: long\n    steps:\n      - deliver: {id: "+id+", data: {}}\n"))
	if err == nil || !strings.Contains(err.Error(), "s.yaml:5:23: event id is 1025 bytes long; ids are limited to 1024 bytes on every store") {
		t.Fatalf("got %v", err)
	}
	if _, err := Load("s.yaml", []byte("version: 1\nchecks:\n  - name: long\n    steps:\n      - deliver: {id: "+id[1:]+", data: {}}\n")); err != nil {
		t.Fatalf("1024 bytes: %v", err)
	}
}
