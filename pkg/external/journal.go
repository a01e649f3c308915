package external

import (
	"context"
	"database/sql"
	"errors"
	"sort"

	"github.com/redeliver/redeliver/pkg/effects"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

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
type journal struct {
	db *sqlite.Scratch
	// The history while the replay is short, and the event ids it
	// delivered with whether the consumer acked one; nil once moved into
	// the journal (spilled).
	hist                   []*Delivery
	acks                   map[string]bool
	spilled                bool
	memDeliveries, memRows int
	// The capture files the deliveries came from, by number.
	files  map[string]int64
	names  []string
	writes int // since the open transaction began
	stmts  map[string]*sql.Stmt
	// Deliveries whose conflict, or whose redelivery of an acked event,
	// changed the key's rows, in order.
	changes []*Delivery
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

// journalBatch is how many writes one transaction of the journal holds.
const journalBatch = 4096

func openJournal(ctx context.Context) (*journal, error) {
	db, err := sqlite.OpenScratch(journalCacheKiB)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, invariant.JournalSchema); err != nil {
		db.Close()
		return nil, err
	}
	return &journal{db: db, files: map[string]int64{}, stmts: map[string]*sql.Stmt{},
		acks: map[string]bool{}, memDeliveries: memDeliveries, memRows: memRows}, nil
}

func (j *journal) close() error {
	for _, st := range j.stmts {
		st.Close()
	}
	return j.db.Close()
}

// stmt is q prepared once: every delivery runs the same few statements.
func (j *journal) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
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
// journalBatch writes.
func (j *journal) write(ctx context.Context, q string, args ...any) error {
	ctx = context.WithoutCancel(ctx)
	if j.writes == 0 {
		if _, err := j.db.ExecContext(ctx, "BEGIN"); err != nil {
			return err
		}
	}
	j.writes++
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

// writeN is write for a statement that returns one integer.
func (j *journal) writeN(ctx context.Context, q string, args ...any) (int64, error) {
	ctx = context.WithoutCancel(ctx)
	if j.writes == 0 {
		if _, err := j.db.ExecContext(ctx, "BEGIN"); err != nil {
			return 0, err
		}
	}
	j.writes++
	st, err := j.stmt(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int64
	if err := st.QueryRowContext(ctx, args...).Scan(&n); err != nil {
		return 0, err
	}
	if j.writes >= journalBatch {
		return n, j.commit(ctx)
	}
	return n, nil
}

func (j *journal) commit(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if j.writes == 0 {
		return nil
	}
	j.writes = 0
	_, err := j.db.ExecContext(ctx, "COMMIT")
	return err
}

// seen says whether event id had a delivery, and whether the consumer
// acked one.
func (j *journal) seen(ctx context.Context, id string) (seen, acked bool, err error) {
	if !j.spilled {
		acked, seen = j.acks[id]
		return seen, acked, nil
	}
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

func (j *journal) file(name string) int64 {
	n, ok := j.files[name]
	if !ok {
		n = int64(len(j.names))
		j.files[name] = n
		j.names = append(j.names, name)
	}
	return n
}

// add records delivery d, and says whether its event had a delivery
// before it.
func (j *journal) add(ctx context.Context, d *Delivery) (seen bool, err error) {
	if j.spilled {
		return j.insert(ctx, d)
	}
	acked, seen := j.acks[d.EventID]
	j.acks[d.EventID] = acked || d.Answer.consumerAcked()
	j.hist = append(j.hist, d)
	if len(j.hist) > j.memDeliveries {
		return seen, j.spill(ctx)
	}
	return seen, nil
}

// spill moves the history kept in memory into the journal, in order.
func (j *journal) spill(ctx context.Context) error {
	hist := j.hist
	j.hist, j.acks, j.spilled = nil, nil, true
	for _, d := range hist {
		if _, err := j.insert(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// insert writes delivery d into the journal, and says whether its event
// had a delivery before it.
func (j *journal) insert(ctx context.Context, d *Delivery) (seen bool, err error) {
	var errText any
	if d.Result.Err != nil {
		errText = d.Result.Err.Error()
	}
	settled := d.Answer.Kind == Acked || d.Answer.Kind == Conflict
	unexpected := !settled && !d.Expected
	conflicted := d.Answer.Kind == Conflict && !d.Expected
	file := j.file(d.Pos.File)
	n, err := j.writeN(ctx, `INSERT INTO event VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?2, ?7, ?8, ?9, ?10, ?11, ?12, ?14)
		ON CONFLICT (id) DO UPDATE SET n = n + 1, settled = max(settled, excluded.settled),
			unexpected = max(unexpected, excluded.unexpected), acked = max(acked, excluded.acked),
			conflicted = max(conflicted, excluded.conflicted),
			answers = CASE WHEN instr(?13 || answers || ?13, ?13 || excluded.answers || ?13) > 0 THEN answers ELSE answers || ?13 || excluded.answers END,
			seq = excluded.seq, key = excluded.key, kind = excluded.kind, err = excluded.err, file = excluded.file, line = excluded.line, col = excluded.col
		RETURNING n`,
		d.EventID, d.Seq, settled, unexpected, d.Answer.consumerAcked(), d.Answer.Short(), d.Key, string(d.Answer.Kind), errText, file, d.Pos.Line, d.Pos.Col, invariant.JournalAnswerSep, conflicted)
	if err != nil {
		return false, err
	}
	if d.Answer.Kind == Acked {
		if err := j.write(ctx, `INSERT OR IGNORE INTO acked VALUES (?, ?, ?, ?, ?, ?)`, d.EventID, d.Key, d.Seq, file, d.Pos.Line, d.Pos.Col); err != nil {
			return false, err
		}
	}
	return n > 1, j.write(ctx, `INSERT OR REPLACE INTO key VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, d.Key, d.Seq, d.EventID, string(d.Answer.Kind), errText, file, d.Pos.Line, d.Pos.Col)
}

// changed keeps a delivery that changed its key's rows.
func (j *journal) changed(d *Delivery) {
	if (d.Answer.Kind == Conflict && d.Changed != "") || d.Duplicated != "" {
		j.changes = append(j.changes, d)
	}
}

// tables is the journal as the catalogue's judge queries it: an
// invariant.Journal.
type tables struct{ j *journal }

func (t tables) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.j.db.QueryContext(ctx, q, args...)
}

func (t tables) File(n int64) string { return t.j.names[n] }

func (t tables) Changed() []invariant.Answered { return answeredAll(t.j.changes) }

// judge reads the effect rows each gives into the journal and returns
// every broken invariant as judge would over the whole history, and the
// number of effect rows.
func (j *journal) judge(ctx context.Context, each func(func(effects.Row) error) error, table string) ([]invariant.Violation, int, error) {
	n := 0
	var mem []effects.Row
	write := func(r effects.Row) error {
		return j.write(ctx, `INSERT INTO effect VALUES (?, ?, ?)`, r.Key, r.Event, r.Values)
	}
	err := each(func(r effects.Row) error {
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
		return judge(j.hist, mem, table), n, nil
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
