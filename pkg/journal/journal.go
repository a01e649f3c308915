// Package journal keeps what the judge needs of a long replay's
// deliveries into a user's consumer, per event and per key, in a private
// SQLite database whose memory is its page cache however long the
// capture, and decides the catalogue's invariants over its tables as
// they are decided over a history. A short replay's deliveries are kept
// in memory and judged as a history. What a delivery is, and what it
// answered, is the caller's (pkg/external): the journal is given what
// the catalogue's judge reads of it (invariant.Answered).
//
// Of this module it imports only pkg/consumer, pkg/invariant and
// pkg/sqlite, and it links no broker client and no driver of a user's
// database.
package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

// Delivery is one delivery as the journal is given it.
type Delivery interface {
	// Event is the delivery's event id, and whether the consumer acked it
	// (invariant.Answered's ConsumerAcked).
	Event() (id string, acked bool)
	// Answered is what the catalogue's judge needs of the delivery. A
	// delivery kept in memory is asked again when it is judged: what a
	// redelivery changed is known only after it was added.
	Answered() invariant.Answered
}

// A replay into a target does not keep its deliveries: what the judge
// needs of them is kept per event and per key in a journal, a private
// SQLite database whose memory is its page cache however long the
// capture (the one a replay that keeps nothing keeps its capture log in).
// Per event: whether it was seen and acked (a redelivery compares the
// key's rows only then), how many deliveries it had, their answers, its
// first delivery and its last (never-acked), and its first delivery
// answered acked for each key (lost-effect); per key: its last delivery
// (duplicate-effect). Its tables are invariant.JournalSchema's. At the
// end the effect rows are read into it as well, and the catalogue decides
// the invariants over its tables (invariant.JudgeJournal), as it decides
// them over a history (invariant.JudgeRows). The deliveries that changed
// a key's rows are breaches in themselves, and kept as they are.
//
// A short replay does not pay for the journal's statements: until it
// has made memDeliveries deliveries, they are kept as they are and judged
// as a history; the first delivery past that moves them into the
// journal, in order, and the journal keeps the rest. The effect rows are
// kept in memory the same way, up to memRows.
type Journal struct {
	db *sqlite.Scratch
	// The history while the replay is short, and the event ids it
	// delivered with whether the consumer acked one; nil once moved into
	// the journal (spilled).
	hist                   []Delivery
	acks                   map[string]bool
	spilled                bool
	memDeliveries, memRows int
	// The capture files the deliveries came from, by number.
	files  map[string]int64
	names  []string
	writes int // since the open transaction began
	stmts  map[string]*sql.Stmt
	// Once spilled, the deliveries are held batch at a time and written
	// together, each table's rows a few statements of many rows; held are
	// the held deliveries' event ids, with whether the consumer acked one,
	// and ids the event ids in the journal or held (the journal is asked
	// whether an event was seen only on its maybe).
	batch   int
	pending []journalRow
	held    map[string]bool
	ids     *SeenFilter
	args    []any
	queries map[[2]int]string
	// Deliveries whose conflict, or whose redelivery of an acked event,
	// changed the key's rows, in order.
	changes []Delivery
}

// journalCacheKiB is the journal's page cache.
const journalCacheKiB = 16 << 10

// memDeliveries and memRows are how many deliveries and effect rows a
// replay keeps in memory before it moves them into its journal: the
// memory they take is bounded, whatever the capture's length.
const (
	memDeliveries = 1 << 15
	memRows       = 1 << 15
)

// journalBatch is how many rows one transaction of the journal writes.
const journalBatch = 4096

// journalHeld is how many deliveries the journal holds before it writes
// them together.
const journalHeld = 256

// journalRow is one delivery as the journal's tables keep it.
type journalRow struct {
	id, key, answer, kind string
	err                   any // nil, or the error's text
	seq                   int
	file                  int64
	line, col             int
	settled, unexpected   bool
	acked, conflicted     bool
	ackedRow              bool // answered acked: a row of the acked table
}

// Open opens an empty journal, in a private SQLite database of its own.
func Open(ctx context.Context) (*Journal, error) {
	db, err := sqlite.OpenScratch(journalCacheKiB)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, invariant.JournalSchema); err != nil {
		db.Close()
		return nil, err
	}
	return &Journal{db: db, files: map[string]int64{}, stmts: map[string]*sql.Stmt{},
		acks: map[string]bool{}, memDeliveries: memDeliveries, memRows: memRows, batch: journalHeld}, nil
}

// Close closes the journal and removes its database.
func (j *Journal) Close() error {
	for _, st := range j.stmts {
		st.Close()
	}
	return j.db.Close()
}

// stmt is q prepared once: every delivery runs the same few statements.
func (j *Journal) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st := j.stmts[q]; st != nil {
		return st, nil
	}
	st, err := j.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	j.stmts[q] = st
	return st, nil
}

// The journal's statements each take microseconds: they run without
// the replay's cancellation (the driver would watch it with a goroutine
// per statement), and the replay checks it between deliveries.

// write runs one statement of the journal, in a transaction of up to
// journalBatch rows.
func (j *Journal) write(ctx context.Context, q string, args ...any) error {
	return j.writeRows(ctx, 1, q, args...)
}

// writeRows is write for a statement that writes n rows.
func (j *Journal) writeRows(ctx context.Context, n int, q string, args ...any) error {
	ctx = context.WithoutCancel(ctx)
	if j.writes == 0 {
		if _, err := j.db.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
	}
	j.writes += n
	st, err := j.stmt(ctx, q)
	if err != nil {
		return err
	}
	if _, err := st.ExecContext(ctx, args...); err != nil {
		return err
	}
	if j.writes >= journalBatch {
		return j.commit(ctx)
	}
	return nil
}

func (j *Journal) commit(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if j.writes == 0 {
		return nil
	}
	j.writes = 0
	_, err := j.db.ExecContext(ctx, "COMMIT")
	return err
}

// History is the deliveries kept in memory, in the order they were
// added; nil once they moved into the journal.
func (j *Journal) History() []Delivery { return j.hist }

// Seen says whether event id had a delivery, and whether the consumer
// acked one.
func (j *Journal) Seen(ctx context.Context, id string) (seen, acked bool, err error) {
	if !j.spilled {
		acked, seen = j.acks[id]
		return seen, acked, nil
	}
	heldAcked, held := j.held[id]
	if heldAcked {
		return true, true, nil
	}
	if !j.ids.Maybe(id) {
		return false, false, nil
	}
	seen, acked, err = j.stored(ctx, id)
	return seen || held, acked, err
}

// stored says whether event id has a delivery written in the journal, and
// whether the consumer acked one.
func (j *Journal) stored(ctx context.Context, id string) (seen, acked bool, err error) {
	ctx = context.WithoutCancel(ctx)
	st, err := j.stmt(ctx, `SELECT acked FROM event WHERE id = ?`)
	if err != nil {
		return false, false, err
	}
	err = st.QueryRowContext(ctx, id).Scan(&acked)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, acked, err
}

func (j *Journal) file(name string) int64 {
	n, ok := j.files[name]
	if !ok {
		n = int64(len(j.names))
		j.files[name] = n
		j.names = append(j.names, name)
	}
	return n
}

// Add records delivery d, and says whether its event had a delivery
// before it.
func (j *Journal) Add(ctx context.Context, d Delivery) (seen bool, err error) {
	if j.spilled {
		return j.insert(ctx, d)
	}
	id, consumerAcked := d.Event()
	acked, seen := j.acks[id]
	j.acks[id] = acked || consumerAcked
	j.hist = append(j.hist, d)
	if len(j.hist) > j.memDeliveries {
		return seen, j.spill(ctx)
	}
	return seen, nil
}

// spill moves the history kept in memory into the journal, in order.
func (j *Journal) spill(ctx context.Context) error {
	hist := j.hist
	j.hist, j.acks, j.spilled = nil, nil, true
	j.held, j.ids = map[string]bool{}, NewSeenFilter()
	for _, d := range hist {
		if _, err := j.insert(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// insert holds delivery d for the journal, writing the held ones once
// they are a batch, and says whether its event had a delivery before it.
func (j *Journal) insert(ctx context.Context, dv Delivery) (seen bool, err error) {
	d := dv.Answered()
	_, seen = j.held[d.EventID]
	if !seen && j.ids.Maybe(d.EventID) {
		if seen, _, err = j.stored(ctx, d.EventID); err != nil {
			return false, err
		}
	}
	var errText any
	if d.Result.Err != nil {
		errText = d.Result.Err.Error()
	}
	settled := d.Answer == consumer.Acked || d.Answer == consumer.Conflict
	j.pending = append(j.pending, journalRow{
		id: d.EventID, key: d.Key, answer: d.Said, kind: string(d.Answer), err: errText,
		seq: d.Seq, file: j.file(d.Pos.File), line: d.Pos.Line, col: d.Pos.Col,
		settled: settled, unexpected: !settled && !d.Expected, acked: d.ConsumerAcked,
		conflicted: d.Answer == consumer.Conflict && !d.Expected, ackedRow: d.Answer == consumer.Acked,
	})
	j.held[d.EventID] = j.held[d.EventID] || d.ConsumerAcked
	j.ids.Add(d.EventID)
	if len(j.pending) >= j.batch {
		return seen, j.flush(ctx)
	}
	return seen, nil
}

// The journal's statements, for rows at a time: an event's row counts its
// deliveries and gathers their answers (each once, in the order they first
// came), and keeps the last one's; an event's first acked delivery for a
// key is kept; a key's row is its last delivery. A statement of many rows
// takes them in order, as that many statements would.
const (
	eventInsert = `INSERT INTO event VALUES %[1]s
		ON CONFLICT (id) DO UPDATE SET n = n + 1, settled = max(settled, excluded.settled),
			unexpected = max(unexpected, excluded.unexpected), acked = max(acked, excluded.acked),
			conflicted = max(conflicted, excluded.conflicted),
			answers = CASE WHEN instr(%[2]s || answers || %[2]s, %[2]s || excluded.answers || %[2]s) > 0 THEN answers ELSE answers || %[2]s || excluded.answers END,
			seq = excluded.seq, key = excluded.key, kind = excluded.kind, err = excluded.err, file = excluded.file, line = excluded.line, col = excluded.col`
	ackedInsert = `INSERT OR IGNORE INTO acked VALUES %[1]s`
	keyInsert   = `INSERT OR REPLACE INTO key VALUES %[1]s`
)

// The journal's tables, for query.
const (
	eventTable = iota
	ackedTable
	keyTable
)

// query is the statement writing n rows of a table.
func (j *Journal) query(table, n int) string {
	if q, ok := j.queries[[2]int{table, n}]; ok {
		return q
	}
	var b strings.Builder
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		// Positional parameters only: the driver looks a numbered one's
		// name up in a list as long as the statement's parameters.
		switch table {
		case eventTable:
			b.WriteString("(?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		case ackedTable:
			b.WriteString("(?, ?, ?, ?, ?, ?)")
		default:
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
		}
	}
	// The answers' separator is a literal of the statement.
	q := fmt.Sprintf([]string{eventInsert, ackedInsert, keyInsert}[table], b.String(), "'"+invariant.JournalAnswerSep+"'")
	if j.queries == nil {
		j.queries = map[[2]int]string{}
	}
	j.queries[[2]int{table, n}] = q
	return q
}

// chunk is how many of n rows the next statement writes: a few sizes, so
// that few statements are prepared.
func chunk(n int) int {
	for _, k := range []int{64, 16, 4} {
		if n >= k {
			return k
		}
	}
	return 1
}

// flush writes the held deliveries.
func (j *Journal) flush(ctx context.Context) error {
	rows := j.pending
	if len(rows) == 0 {
		return nil
	}
	j.pending = j.pending[:0]
	clear(j.held)
	if err := j.many(ctx, eventTable, rows, func(r *journalRow, args []any) []any {
		return append(args, r.id, r.seq, r.settled, r.unexpected, r.acked, r.answer, r.seq, r.key, r.kind, r.err, r.file, r.line, r.col, r.conflicted)
	}); err != nil {
		return err
	}
	var acked []journalRow
	for _, r := range rows {
		if r.ackedRow {
			acked = append(acked, r)
		}
	}
	if err := j.many(ctx, ackedTable, acked, func(r *journalRow, args []any) []any {
		return append(args, r.id, r.key, r.seq, r.file, r.line, r.col)
	}); err != nil {
		return err
	}
	return j.many(ctx, keyTable, rows, func(r *journalRow, args []any) []any {
		return append(args, r.key, r.seq, r.id, r.kind, r.err, r.file, r.line, r.col)
	})
}

// many writes rows into a table, in order, many a statement.
func (j *Journal) many(ctx context.Context, table int, rows []journalRow, values func(*journalRow, []any) []any) error {
	for len(rows) > 0 {
		n := chunk(len(rows))
		args := j.args[:0]
		for i := range n {
			args = values(&rows[i], args)
		}
		j.args = args
		if err := j.writeRows(ctx, n, j.query(table, n), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	clear(j.args)
	return nil
}

// Changed keeps a delivery that changed its key's rows.
func (j *Journal) Changed(d Delivery) {
	if a := d.Answered(); (a.Answer == consumer.Conflict && a.Changed != "") || a.Duplicated != "" {
		j.changes = append(j.changes, d)
	}
}

// tables is the journal as the catalogue's judge queries it: an
// invariant.Journal.
type tables struct{ j *Journal }

func (t tables) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.j.db.QueryContext(ctx, q, args...)
}

func (t tables) File(n int64) string { return t.j.names[n] }

func (t tables) Changed() []invariant.Answered { return answeredAll(t.j.changes) }

// Judge reads the effect rows each gives (as effects.DB.EachRow does)
// into the journal and returns
// every broken invariant as invariant.JudgeRows would over the whole
// history, and the number of effect rows.
func (j *Journal) Judge(ctx context.Context, each func(func(invariant.Row) error) error, table string) ([]invariant.Violation, int, error) {
	n := 0
	var mem []invariant.Row
	write := func(r invariant.Row) error {
		return j.write(ctx, `INSERT INTO effect VALUES (?, ?, ?)`, r.Key, r.Event, r.Values)
	}
	err := each(func(r invariant.Row) error {
		n++
		if j.spilled {
			return write(r)
		}
		mem = append(mem, r)
		if len(mem) <= j.memRows {
			return nil
		}
		if err := j.spill(ctx); err != nil {
			return err
		}
		for _, r := range mem {
			if err := write(r); err != nil {
				return err
			}
		}
		mem = nil
		return nil
	})
	if err == nil && !j.spilled {
		// The rows as effects.DB.Rows gives them: in the order of their
		// values.
		sort.SliceStable(mem, func(a, b int) bool { return mem[a].Values < mem[b].Values })
		return invariant.JudgeRows(answeredAll(j.hist), mem, table), n, nil
	}
	if err == nil {
		err = j.flush(ctx)
	}
	if err == nil {
		err = j.commit(ctx)
	}
	if err == nil {
		_, err = j.db.ExecContext(ctx, invariant.JournalIndex)
	}
	if err != nil {
		return nil, 0, err
	}
	out, err := invariant.JudgeJournal(ctx, tables{j}, table)
	if err != nil {
		return nil, 0, err
	}
	return out, n, nil
}

// answeredAll is what the judge needs of each delivery of a history.
func answeredAll(history []Delivery) []invariant.Answered {
	out := make([]invariant.Answered, len(history))
	for i, d := range history {
		out[i] = d.Answered()
	}
	return out
}
