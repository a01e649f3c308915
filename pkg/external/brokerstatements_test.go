package external

import (
	"reflect"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// TestTxEnded: a kill at a broker delivery's statement boundary came after
// its transaction ended only when the server had answered a COMMIT of it
// by then.
func TestTxEnded(t *testing.T) {
	trace := []sqlproxy.Statement{
		{Index: 1, Text: "SELECT 1", Answer: "SELECT 1"},
		{Index: 2, Text: "begin", Answer: "BEGIN"},
		{Index: 3, Text: "INSERT INTO payments VALUES (1)", Answer: "INSERT 0 1"},
		{Index: 4, Text: "commit", Answer: "COMMIT"},
		{Index: 5, Text: "begin", Answer: "BEGIN"},
		{Index: 6, Text: "INSERT INTO processed VALUES (1)", Answer: "INSERT 0 1"},
		{Index: 7, Text: "commit", Answer: "COMMIT"},
	}
	rolledBack := []sqlproxy.Statement{
		{Index: 1, Text: "begin", Answer: "BEGIN"},
		{Index: 2, Text: "commit", Answer: "ROLLBACK"},
		{Index: 3, Text: "SELECT 1", Answer: "SELECT 1"},
	}
	// MySQL answers OK to every statement that returns no rows.
	mysql := []sqlproxy.Statement{
		{Index: 1, Text: "SELECT 1", Answer: "SELECT 1"},
		{Index: 2, Text: "START TRANSACTION", Answer: "OK"},
		{Index: 3, Text: "INSERT INTO payments VALUES (1)", Answer: "INSERT 1"},
		{Index: 4, Text: "COMMIT", Answer: "OK"},
		{Index: 5, Text: "SET autocommit=0", Answer: "OK"},
		{Index: 6, Text: "INSERT INTO processed VALUES (1)", Answer: "INSERT 1"},
		{Index: 7, Text: "commit", Answer: "OK"},
	}
	mysqlFailed := []sqlproxy.Statement{
		{Index: 1, Text: "START TRANSACTION", Answer: "OK"},
		{Index: 2, Text: "INSERT INTO payments VALUES (1)", Answer: "INSERT 1"},
		{Index: 3, Text: "COMMIT", Answer: "ERROR 1180"},
		{Index: 4, Text: "SELECT 1", Answer: "SELECT 1"},
	}
	for _, tt := range []struct {
		name  string
		trace []sqlproxy.Statement
		at    sqlproxy.Boundary
		want  bool
	}{
		{"after the first statement", trace, sqlproxy.Boundary{Index: 1, After: true}, false},
		{"before the commit", trace, sqlproxy.Boundary{Index: 4}, false},
		{"after the commit", trace, sqlproxy.Boundary{Index: 4, After: true}, true},
		{"before the second transaction", trace, sqlproxy.Boundary{Index: 5}, true},
		{"after the last commit", trace, sqlproxy.Boundary{Index: 7, After: true}, true},
		{"a commit rolled back ends no work", rolledBack, sqlproxy.Boundary{Index: 3, After: true}, false},
		{"MySQL: after START TRANSACTION", mysql, sqlproxy.Boundary{Index: 2, After: true}, false},
		{"MySQL: before the commit", mysql, sqlproxy.Boundary{Index: 4}, false},
		{"MySQL: after the commit", mysql, sqlproxy.Boundary{Index: 4, After: true}, true},
		{"MySQL: after a statement answered OK that is no commit", mysql[:3:3], sqlproxy.Boundary{Index: 3, After: true}, false},
		{"MySQL: after a lowercase commit", mysql[4:], sqlproxy.Boundary{Index: 7, After: true}, true},
		{"MySQL: a commit that failed ends no work", mysqlFailed, sqlproxy.Boundary{Index: 4, After: true}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := txEnded(tt.trace, &tt.at); got != tt.want {
				t.Errorf("txEnded at %s = %v, want %v", tt.at, got, tt.want)
			}
		})
	}
}

// TestWithRedelivery: the redelivery's statements follow the killed
// attempt's, each marked as the redelivery's, the killed attempt's left
// as they were; with none, the trace is the killed attempt's.
func TestWithRedelivery(t *testing.T) {
	killed := func() []consumer.Statement {
		return []consumer.Statement{{Text: "begin"}, {Text: "commit", Held: true}}
	}
	for _, tt := range []struct {
		name  string
		again []consumer.Statement
		want  []consumer.Statement
	}{
		{"none", nil, killed()},
		{"two", []consumer.Statement{{Text: "INSERT INTO processed_messages"}, {Text: "INSERT INTO payments"}}, []consumer.Statement{
			{Text: "begin"}, {Text: "commit", Held: true},
			{Text: "INSERT INTO processed_messages", Redelivery: true}, {Text: "INSERT INTO payments", Redelivery: true},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := withRedelivery(killed(), tt.again); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("withRedelivery = %+v, want %+v", got, tt.want)
			}
		})
	}
}
