package handler

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
)

func TestValidEffectTable(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"effects", true},
		{"shipments", true},
		{"_t1", true},
		{"Payments2", true},
		{"", false},
		{"1table", false},
		{"ship-ments", false},
		{"a.b", false},
		{`x"; DROP TABLE processed; --`, false},
		{"processed", false},
		{"PROCESSED", false},
		{"redeliver_meta", false},
		{"sqlite_master", false},
		{"SQLite_x", false},
		{"pg_class", false},
		{"Pg_Stats", false},
	}
	for _, tt := range tests {
		if got := ValidEffectTable(tt.name); got != tt.want {
			t.Errorf("ValidEffectTable(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseNames(t *testing.T) {
	for _, s := range Strategies {
		if got, ok := ParseStrategy(string(s)); !ok || got != s {
			t.Errorf("ParseStrategy(%q) = %q, %v", s, got, ok)
		}
	}
	for _, p := range consumer.FaultPoints {
		if got, ok := consumer.ParseFaultPoint(string(p)); !ok || got != p {
			t.Errorf("ParseFaultPoint(%q) = %q, %v", p, got, ok)
		}
	}
	if _, ok := ParseStrategy("evnt-id"); ok {
		t.Error(`ParseStrategy("evnt-id") = ok`)
	}
	if _, ok := consumer.ParseFaultPoint("after-comit"); ok {
		t.Error(`ParseFaultPoint("after-comit") = ok`)
	}
}
