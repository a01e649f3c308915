package sqlite

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Each parameter is a call into SQLite under the connection's mutex,
// and a text one a copy into C memory first (through the driver, a
// malloc and a free under the one lock of the allocator the parts of a
// split replay share, and NULL bound over it after the step). Two
// parameters of the handler's inserts are the same delivery after
// delivery: the consumer (the replay's one, unless the strategy is
// consumer-scoped and the deliveries name their own) and the time stamp
// (a replay's clock stands still); and the business key is empty (NULL)
// in a capture that gives none. The batch writes those into the
// statements' text as literals, and binds the rest: a new event's two
// inserts bind 5 parameters instead of 11, 4 of them text instead of 8.
// The rows are the same: a literal is the same text a parameter binds.

// literals is the batch's statements with the consumer and the time stamp
// written in, each prepared on its first use.
type literals struct {
	on              bool // the statements below are for consumer and stamp
	off             bool // the values changed too often: parameters only
	changes         int
	consumer, stamp string
	c, s            string // consumer and stamp as SQL literals
	effect          string
	marker          *prepared
	// [0]: the business key is NULL, [1]: bound.
	insertMarker, insertEffect, insertEffectAt [2]*prepared
}

// literalChanges is how many times the consumer or the stamp may change
// before the batch stops writing them into its statements (a
// consumer-scoped replay whose deliveries name many consumers, a clock
// that moves): each change prepares the statements again. Built with
// -tags noliterals it is 0: everything is bound, the variant the
// literals' benchmark is measured beside (docs/performance.md).
const literalChanges = literalMax

// sqlText is s as an SQL string literal, when it can be one: a literal
// holds the same text as a bound parameter unless s has a NUL byte (the
// statement's text ends there) or is not UTF-8.
func sqlText(s string) (string, bool) {
	if strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return "", false
	}
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`, true
}

// use makes the statements the ones for consumer and stamp, and says
// whether there are such statements.
func (l *literals) use(consumer, stamp string) bool {
	if l.off {
		return false
	}
	if l.on && l.consumer == consumer && l.stamp == stamp {
		return true
	}
	if l.on {
		l.close()
		l.changes++
	}
	c, okC := sqlText(consumer)
	s, okS := sqlText(stamp)
	if l.changes >= literalChanges || !okC || !okS {
		l.off = true
		return false
	}
	l.on, l.consumer, l.stamp, l.c, l.s = true, consumer, stamp, c, s
	return true
}

// lookup is the marker lookup for consumer, or nil when the statements
// are not for it.
func (l *literals) lookup(b *Batch, consumer string) (*prepared, error) {
	if !l.on || l.consumer != consumer {
		return nil, nil
	}
	if l.marker != nil {
		return l.marker, nil
	}
	return l.prepare(b, &l.marker, `SELECT p.identity, COALESCE(p.business_key, '') FROM processed p WHERE p.event_id = ? AND p.consumer = `+l.c+` LIMIT 1`)
}

// keyed is the index of a statement variant: 1 when the business key is
// bound, 0 when it is NULL.
func keyed(key string) int {
	if key == "" {
		return 0
	}
	return 1
}

// keyText is the business key's value in a statement: bound, or NULL.
var keyText = [2]string{`NULL`, `NULLIF(?, '')`}

// markerInsert is the marker insert: parameters event id, identity and, keyed,
// the business key.
func (l *literals) markerInsert(b *Batch, k int) (*prepared, error) {
	if p := l.insertMarker[k]; p != nil {
		return p, nil
	}
	return l.prepare(b, &l.insertMarker[k], `INSERT INTO processed(event_id, consumer, identity, business_key, processed_at) VALUES (?, `+l.c+`, ?, `+keyText[k]+`, `+l.s+`)`)
}

// effectInsert is the effect insert: parameters (the id, when at), event
// id, (keyed) the business key, and the payload.
func (l *literals) effectInsert(b *Batch, k int, at bool) (*prepared, error) {
	if at && l.insertEffectAt[k] != nil {
		return l.insertEffectAt[k], nil
	} else if !at && l.insertEffect[k] != nil {
		return l.insertEffect[k], nil
	}
	t := `"` + l.effect + `"`
	if at {
		return l.prepare(b, &l.insertEffectAt[k], `INSERT INTO `+t+`(id, event_id, consumer, business_key, payload, created_at) VALUES (?, ?, `+l.c+`, `+keyText[k]+`, ?, `+l.s+`)`)
	}
	return l.prepare(b, &l.insertEffect[k], `INSERT INTO `+t+`(event_id, consumer, business_key, payload, created_at) VALUES (?, `+l.c+`, `+keyText[k]+`, ?, `+l.s+`)`)
}

func (l *literals) prepare(b *Batch, p **prepared, q string) (*prepared, error) {
	st, err := prepare(b.conn, b.raw, q)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", q, err)
	}
	*p = st
	return st, nil
}

// close closes the statements prepared.
func (l *literals) close() {
	closeAll(l.marker, l.insertMarker[0], l.insertMarker[1], l.insertEffect[0], l.insertEffect[1], l.insertEffectAt[0], l.insertEffectAt[1])
	l.marker = nil
	l.insertMarker, l.insertEffect, l.insertEffectAt = [2]*prepared{}, [2]*prepared{}, [2]*prepared{}
	l.on = false
}
