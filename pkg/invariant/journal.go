package invariant

// The judge of a user's consumer over a journal: a replay too long to keep
// its deliveries keeps, per event and per key, what the judge needs of
// them in JournalSchema's tables, reads the effect rows into them at the
// end, and asks every invariant a user's database checks (its
// judgeJournal, in the catalogue) for its breaches over those tables: the
// breaches JudgeRows finds over the whole history, in the same order,
// naming the same deliveries.

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// JournalSchema is the tables a journal keeps, in SQLite. Per event: how
// many deliveries it had, whether one was settled (acked or a conflict),
// one unexpectedly not settled, one acked by the consumer, one an
// unexpected conflict, its answers in words (joined by JournalAnswerSep,
// each once), its first delivery's seq and its last delivery; per event
// and key, its first delivery answered acked; per key, its last delivery;
// and the effect rows. A delivery's file is the number Journal.File names.
const JournalSchema = `
CREATE TABLE event (
	id TEXT PRIMARY KEY, first INTEGER NOT NULL, n INTEGER NOT NULL,
	settled INTEGER NOT NULL, unexpected INTEGER NOT NULL, acked INTEGER NOT NULL,
	answers TEXT NOT NULL,
	seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, err TEXT, file INTEGER NOT NULL, line INTEGER NOT NULL, col INTEGER NOT NULL,
	conflicted INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE acked (
	event TEXT NOT NULL, key TEXT NOT NULL,
	seq INTEGER NOT NULL, file INTEGER NOT NULL, line INTEGER NOT NULL, col INTEGER NOT NULL,
	PRIMARY KEY (event, key)
) WITHOUT ROWID;
CREATE TABLE key (
	key TEXT PRIMARY KEY,
	seq INTEGER NOT NULL, event TEXT NOT NULL, kind TEXT NOT NULL, err TEXT, file INTEGER NOT NULL, line INTEGER NOT NULL, col INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE effect (key TEXT NOT NULL, event TEXT NOT NULL, vals TEXT NOT NULL);
`

// JournalIndex is the index the decisions read the effect rows by: a
// journal creates it once every row is in.
const JournalIndex = `CREATE INDEX effect_key ON effect (key, vals)`

// JournalAnswerSep separates an event's answers in words (one line each).
const JournalAnswerSep = "\x1f"

// Journal is what a replay keeps of its deliveries to a user's consumer
// instead of a history.
type Journal interface {
	// Query runs a query over JournalSchema's tables, every row in.
	Query(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	// File names the capture file the tables number n.
	File(n int64) string
	// Changed lists the deliveries that changed their key's rows (their
	// Changed or Duplicated said how), in order: few, kept as they are.
	Changed() []Answered
}

// JudgeJournal returns every broken invariant of the deliveries j keeps
// and the effect table named table, as JudgeRows would over the whole
// history.
func JudgeJournal(ctx context.Context, j Journal, table string) ([]Violation, error) {
	c := &journalCheck{ctx: ctx, j: j, table: table}
	for _, inv := range judged {
		if err := inv.judgeJournal(c, inv); err != nil {
			return nil, err
		}
	}
	return c.out, nil
}

// journalCheck is a journal, as the decisions query it.
type journalCheck struct {
	ctx   context.Context
	j     Journal
	table string
	out   []Violation
}

// record is a delivery as the journal keeps it, as the report names it.
func (c *journalCheck) record(seq int64, event, key, kind string, errText sql.NullString, file int64, line, col int) *Record {
	r := &Record{Seq: int(seq), EventID: event, Key: key, Result: consumer.Result{Outcome: consumer.Outcome(kind)},
		Pos: consumer.Location{File: c.j.File(file), Line: line, Col: col}}
	if errText.Valid {
		r.Result.Err = errors.New(errText.String)
	}
	return r
}

// duplicateEffects: a key with more than one row, its rows in the order of
// their values, by the key's last delivery.
func (c *journalCheck) duplicateEffects(inv *Invariant) error {
	rows, err := c.j.Query(c.ctx, `SELECT f.key, f.event, k.seq, k.event, k.kind, k.err, k.file, k.line, k.col
		FROM effect f LEFT JOIN key k ON k.key = f.key
		WHERE f.key IN (SELECT key FROM effect GROUP BY key HAVING count(*) > 1)
		ORDER BY f.key, f.vals, f.rowid`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur string
	var events []string
	var rs int64
	var by *Record
	flush := func() {
		if rs > 0 {
			c.out = append(c.out, duplicateEffect(inv, cur, rs, events, c.table, by))
		}
	}
	for rows.Next() {
		var key, event string
		var seq, file, line, col sql.NullInt64
		var kev, kind, errText sql.NullString
		if err := rows.Scan(&key, &event, &seq, &kev, &kind, &errText, &file, &line, &col); err != nil {
			return err
		}
		if key != cur || rs == 0 {
			flush()
			cur, events, rs, by = key, nil, 0, nil
			if seq.Valid {
				by = c.record(seq.Int64, kev.String, key, kind.String, errText, file.Int64, int(line.Int64), int(col.Int64))
			}
		}
		rs++
		if event != "" {
			events = append(events, event)
		}
	}
	flush()
	return rows.Close()
}

// lostEffects: an acked delivery whose key has no row, the first of its
// event.
func (c *journalCheck) lostEffects(inv *Invariant) error {
	rows, err := c.j.Query(c.ctx, `SELECT a.event, a.key, a.seq, a.file, a.line, a.col FROM acked a
		WHERE NOT EXISTS (SELECT 1 FROM effect f WHERE f.key = a.key) ORDER BY a.seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	lost := map[string]bool{}
	for rows.Next() {
		var event, key string
		var seq, file int64
		var line, col int
		if err := rows.Scan(&event, &key, &seq, &file, &line, &col); err != nil {
			return err
		}
		if lost[event] {
			continue
		}
		lost[event] = true
		c.out = append(c.out, lostEffect(inv, c.record(seq, event, key, string(consumer.Acked), sql.NullString{}, file, line, col), c.table))
	}
	return rows.Close()
}

// changedByConflict: the journal keeps the deliveries that changed their
// key's rows as they are.
func (c *journalCheck) changedByConflict(inv *Invariant) error {
	c.out = append(c.out, changedByConflict(inv, c.j.Changed(), c.table)...)
	return nil
}

func (c *journalCheck) changedByDuplicate(inv *Invariant) error {
	c.out = append(c.out, changedByDuplicate(inv, c.j.Changed(), c.table)...)
	return nil
}

// neverAcked, in the order the events were first delivered: no ack nor
// conflict, or only conflicts with no row of the key to conflict with.
func (c *journalCheck) neverAcked(inv *Invariant) error {
	rows, err := c.j.Query(c.ctx, `SELECT id, n, answers, seq, key, kind, err, file, line, col, settled FROM event e
		WHERE (settled = 0 AND unexpected = 1)
			OR (acked = 0 AND conflicted = 1 AND NOT EXISTS (SELECT 1 FROM effect f WHERE f.key = e.key))
		ORDER BY first`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id, answers, key, kind string
		var errText sql.NullString
		var deliveries, seq, file int64
		var line, col int
		var settled bool
		if err := rows.Scan(&id, &deliveries, &answers, &seq, &key, &kind, &errText, &file, &line, &col, &settled); err != nil {
			return err
		}
		v := neverAckedOne(inv, id, deliveries, splitAnswers(answers), c.record(seq, id, key, kind, errText, file, line, col))
		if settled {
			v = conflictWithNothing(v, key, c.table)
		}
		c.out = append(c.out, v)
	}
	return rows.Err()
}

// splitAnswers reads the answers a journal keeps of an event.
func splitAnswers(s string) []string { return strings.Split(s, JournalAnswerSep) }
