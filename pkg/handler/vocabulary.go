package handler

import (
	"regexp"
	"strings"
)

// The handler's defaults, where a scenario or a replay leaves them out.
const (
	DefaultStrategy = EventID
	DefaultConsumer = "default"
	DefaultEffect   = "effects"
	// MarkerTable is the table of processed markers.
	MarkerTable = "processed"
)

// ParseStrategy returns the strategy named s.
func ParseStrategy(s string) (Strategy, bool) {
	for _, k := range Strategies {
		if string(k) == s {
			return k, true
		}
	}
	return "", false
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reservedPrefixes begin the names of tables a store keeps for itself:
// redeliver's own, SQLite's and PostgreSQL's catalogues.
var reservedPrefixes = []string{"redeliver_", "sqlite_", "pg_"}

// ValidEffectTable is the rule for the name of an effect table, the same
// for every store because the name becomes part of SQL text: a plain SQL
// identifier that is not the marker table and does not begin with a
// prefix a store reserves (compared without case).
func ValidEffectTable(name string) bool {
	if !identifier.MatchString(name) {
		return false
	}
	low := strings.ToLower(name)
	if low == MarkerTable {
		return false
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(low, p) {
			return false
		}
	}
	return true
}
