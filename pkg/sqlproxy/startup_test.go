package sqlproxy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// packet is a startup packet of the given version and parameter pairs.
func packet(version uint32, pairs ...string) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b[4:], version)
	for _, p := range pairs {
		b = append(append(b, p...), 0)
	}
	b = append(b, 0)
	binary.BigEndian.PutUint32(b, uint32(len(b)))
	return b
}

func TestWithParam(t *testing.T) {
	v3 := uint32(3 << 16)
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{"added", packet(v3, "user", "bob", "database", "test"), packet(v3, "user", "bob", "database", "test", checkParam, "1000")},
		{"no parameters", packet(v3), packet(v3, checkParam, "1000")},
		{"set by the client", packet(v3, "user", "bob", checkParam, "5000"), packet(v3, "user", "bob", checkParam, "5000")},
		{"set in the options", packet(v3, "user", "bob", "options", "-c "+checkParam+"=0"), packet(v3, "user", "bob", "options", "-c "+checkParam+"=0")},
		{"other options", packet(v3, "options", "-c search_path=app"), packet(v3, "options", "-c search_path=app", checkParam, "1000")},
		{"protocol 2", packet(2<<16, "user", "bob"), packet(2<<16, "user", "bob")},
		{"cut short", packet(v3, "user", "bob")[:14], packet(v3, "user", "bob")[:14]},
		{"a name with no value", packet(v3, "user"), packet(v3, "user")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withParam(tc.in, checkParam, "1000"); !bytes.Equal(got, tc.want) {
				t.Errorf("withParam(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"BEGIN", true},
		{"begin isolation level serializable", true},
		{"COMMIT", true},
		{"/* app='x' */ SELECT 1 FROM processed WHERE event_id = $1", true},
		{"select * from payments for update", true},
		{"SET search_path = app", true},
		{"SHOW server_version", true},
		{"SELECT count(*) FROM payments", false},
		{"SELECT pay($1, $2)", false},
		{"SELECT nextval('s')", false},
		{"INSERT INTO payments VALUES ($1)", false},
		{"WITH x AS (INSERT INTO p VALUES (1) RETURNING 1) SELECT * FROM x", false},
		{"UPDATE balances SET balance = balance + 1", false},
		{"COPY payments FROM STDIN", false},
		{"CALL pay($1)", false},
		{"-- ping\n", false},
	} {
		if got := ReadOnly(tc.text); got != tc.want {
			t.Errorf("ReadOnly(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}
