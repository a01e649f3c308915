package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// CaptureLog is a scratch table of what a capture holds, one row per
// delivery: its id, a hash of its identity, its business key and where it
// came from. It lives in a private database of its own (SQLite's temporary
// one, see openPrivate: memory does not grow with the capture, and the file
// vanishes with the connection, even after SIGKILL), written by a goroutine
// of its own in one transaction: the rows cost the goroutine that drives
// the handler a copy and a channel send, and the findings, aggregate
// queries over the log, are counted beside the invariants. Nothing in it
// outlives the replay, so nothing in it needs to be atomic with a delivery.
type CaptureLog struct {
	db     *DB
	conn   *sql.Conn
	w      logWriter
	closed sync.Once
}

// logWriter feeds the log's rows to its goroutine.
type logWriter struct {
	in   chan logItem
	done chan struct{}
	once sync.Once
	mu   sync.Mutex
	err  error
}

// logItem is rows of the capture, or the name of capture file number file.
type logItem struct {
	rows []CaptureRow
	file int
	name string
}

const captureSchema = `CREATE TEMP TABLE capture(
  event_id TEXT NOT NULL,
  identity INTEGER NOT NULL,
  business_key TEXT NOT NULL,
  file INTEGER NOT NULL,
  line INTEGER NOT NULL
);
CREATE TEMP TABLE capture_files(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL
)`

// CaptureLog creates an empty capture log for the replay. Its rows are
// written through Batch.RecordRows and Batch.RecordFile.
func (r *ReplayDB) CaptureLog(ctx context.Context) (*CaptureLog, error) {
	if r.log != nil {
		r.log.Close()
		r.log = nil
	}
	d, err := openPrivate(checkCacheKiB)
	if err != nil {
		return nil, fmt.Errorf("capture log: %w", err)
	}
	if _, err := d.anchor.ExecContext(ctx, captureSchema); err != nil {
		d.Close()
		return nil, fmt.Errorf("capture log: %w", err)
	}
	c := &CaptureLog{db: d, conn: d.anchor}
	c.w.in, c.w.done = make(chan logItem, 16), make(chan struct{})
	go c.write()
	r.log = c
	return c, nil
}

// write inserts what arrives on the log's channel until it is closed.
func (c *CaptureLog) write() {
	defer close(c.w.done)
	err := c.conn.Raw(func(dc any) error {
		b, err := newLogBatch(dc)
		if err != nil {
			return err
		}
		defer b.close()
		if _, err := b.exec(b.begin); err != nil {
			return err
		}
		for it := range c.w.in {
			if err == nil {
				err = b.record(it)
			}
			if err != nil {
				c.w.fail(err) // the rest is drained, unread
			}
		}
		if err != nil {
			return err
		}
		_, err = b.exec(b.commit)
		return err
	})
	if err != nil {
		c.w.fail(err)
	}
}

func (w *logWriter) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = fmt.Errorf("capture log: %w", err)
	}
}

func (w *logWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// send hands rows to the log's goroutine; an error it met is returned by
// the next send.
func (c *CaptureLog) send(it logItem) error {
	if err := c.w.failed(); err != nil {
		return err
	}
	select {
	case <-c.w.done:
		return errors.New("capture log: closed")
	default:
	}
	c.w.in <- it
	return nil
}

// wait lets the log's goroutine write what it was sent and commit.
func (c *CaptureLog) wait() error {
	c.w.once.Do(func() { close(c.w.in) })
	<-c.w.done
	return c.w.failed()
}

// Close drops the log.
func (c *CaptureLog) Close() error {
	c.wait()
	var err error
	c.closed.Do(func() { err = c.db.Close() })
	return err
}

// captureRows is how many rows one statement of RecordRows inserts: the
// per-statement cost (step, reset, result) is paid once for them all.
const captureRows = 64

// RecordRows writes deliveries of the capture into the capture log, in
// order. It must not be called while a delivery's transaction is open.
func (b *Batch) RecordRows(rows []CaptureRow) error {
	if b.tx.active {
		return errors.New("capture log written inside a delivery")
	}
	return b.log.RecordRows(rows)
}

// RecordFile names capture file number n in the capture log.
func (b *Batch) RecordFile(n int, name string) error {
	if b.tx.active {
		return errors.New("capture log written inside a delivery")
	}
	return b.log.RecordFile(n, name)
}

// RecordRows hands deliveries of the capture to the log's goroutine, in
// order (a copy of rows: the caller reuses it).
func (c *CaptureLog) RecordRows(rows []CaptureRow) error {
	if c == nil {
		return errors.New("capture log: none was made")
	}
	return c.send(logItem{rows: slices.Clone(rows)})
}

// RecordFile names capture file number n in the capture log.
func (c *CaptureLog) RecordFile(n int, name string) error {
	if c == nil {
		return errors.New("capture log: none was made")
	}
	return c.send(logItem{file: n, name: name})
}

// logBatch is the log goroutine's prepared statements.
type logBatch struct {
	conn          driver.Conn
	raw           *rawConn // see raw.go; nil: through the driver
	args          []driver.NamedValue
	values        []any // a statement's parameters
	begin, commit *prepared
	// row and rows insert one row and captureRows rows: [1] with the
	// business key bound, [0] with the empty key written in, for rows
	// that all have none (the key is a text parameter, which the driver
	// copies into C memory, and most captures give no key).
	row, rows [2]*prepared
	file      *prepared
}

func newLogBatch(dc any) (*logBatch, error) {
	conn, ok := dc.(driver.Conn)
	if !ok {
		return nil, errors.New("sqlite driver connection expected")
	}
	b := &logBatch{conn: conn, raw: rawOf(conn), args: make([]driver.NamedValue, 5*captureRows), values: make([]any, 5*captureRows)}
	for i := range b.args {
		b.args[i].Ordinal = i + 1
	}
	for _, s := range []struct {
		p   **prepared
		sql string
	}{
		{&b.begin, `BEGIN`},
		{&b.commit, `COMMIT`},
		{&b.row[0], captureInsert(1, false)},
		{&b.rows[0], captureInsert(captureRows, false)},
		{&b.row[1], captureInsert(1, true)},
		{&b.rows[1], captureInsert(captureRows, true)},
		{&b.file, `INSERT INTO temp.capture_files(id, name) VALUES (?, ?)`},
	} {
		st, err := prepare(conn, b.raw, s.sql)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("prepare %q: %w", s.sql, err)
		}
		*s.p = st
	}
	return b, nil
}

func (b *logBatch) close() {
	closeAll(b.begin, b.commit, b.row[0], b.rows[0], b.row[1], b.rows[1], b.file)
	b.raw.close()
	b.raw = nil
}

func (b *logBatch) exec(p *prepared, args ...any) (driver.Result, error) { return p.run(b.args, args) }

func (b *logBatch) record(it logItem) error {
	if it.rows == nil {
		_, err := b.exec(b.file, int64(it.file), it.name)
		return err
	}
	rows := it.rows
	for len(rows) > 0 {
		n := 1
		if len(rows) >= captureRows {
			n = captureRows
		}
		keyed := 0
		for _, r := range rows[:n] {
			if r.Key != "" {
				keyed = 1
				break
			}
		}
		p := b.row[keyed]
		if n > 1 {
			p = b.rows[keyed]
		}
		w := 4 + keyed // parameters a row
		vs := b.values[:w*n]
		for i, r := range rows[:n] {
			a := vs[w*i : w*i+w]
			a[0] = r.EventID
			a[1] = r.Identity
			a[2] = int64(r.File)
			a[3] = int64(r.Line)
			if keyed == 1 {
				a[4] = r.Key
			}
		}
		if _, err := p.run(b.args, vs); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// captureInsert inserts n rows, each bound as its event id, identity,
// file, line and, keyed, business key (else the key is empty).
func captureInsert(n int, keyed bool) string {
	row := `(?, ?, ?, ?, '')`
	if keyed {
		row = `(?, ?, ?, ?, ?)`
	}
	q := `INSERT INTO temp.capture(event_id, identity, file, line, business_key) VALUES `
	return q + strings.Repeat(row+`, `, n-1) + row
}

// Findings counts the capture's repeated ids, reused ids and keys under
// several ids, with up to limit examples.
func (c *CaptureLog) Findings(ctx context.Context, limit int) (CaptureFindings, error) {
	var f CaptureFindings
	if err := c.wait(); err != nil {
		return f, err
	}
	// One sort of the capture by id answers the first four counts.
	err := c.conn.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0), count(*), coalesce(sum(n > 1), 0), coalesce(sum(identities > 1), 0) FROM (
		SELECT count(*) AS n, count(DISTINCT identity) AS identities FROM capture GROUP BY event_id)`).Scan(&f.Deliveries, &f.DistinctIDs, &f.RepeatedIDs, &f.IdentityReuse)
	if err != nil {
		return f, fmt.Errorf("count capture: %w", err)
	}
	err = c.conn.QueryRowContext(ctx, `SELECT count(*) FROM (
		SELECT 1 FROM capture WHERE business_key <> '' GROUP BY business_key HAVING count(DISTINCT event_id) > 1)`).Scan(&f.KeysWithSeveralIDs)
	if err != nil {
		return f, fmt.Errorf("count keys: %w", err)
	}
	if limit <= 0 || f.IdentityReuse == 0 && f.KeysWithSeveralIDs == 0 {
		return f, nil // no example to place
	}
	loc, err := c.locator(ctx)
	if err != nil {
		return f, err
	}
	if f.IdentityReuse > 0 {
		if f.Reuse, err = c.reuseExamples(ctx, loc, limit); err != nil {
			return f, err
		}
	}
	if f.KeysWithSeveralIDs > 0 {
		if f.Keys, err = c.keyExamples(ctx, loc, limit); err != nil {
			return f, err
		}
	}
	return f, nil
}

// locator reads the capture's files: where a line of one is, by its id.
func (c *CaptureLog) locator(ctx context.Context) (locate, error) {
	files := map[int64]string{}
	err := c.query(ctx, func(rows *sql.Rows) error {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		files[id] = name
		return nil
	}, `SELECT id, name FROM temp.capture_files`)
	return func(file, line int64) consumer.Location { return consumer.Location{File: files[file], Line: int(line)} }, err
}

// reuseExamples are the first limit ids delivered with another payload:
// where each first came, and the first delivery that differs.
func (c *CaptureLog) reuseExamples(ctx context.Context, loc locate, limit int) ([]Reuse, error) {
	var out []Reuse
	err := c.query(ctx, func(rows *sql.Rows) error {
		var ev, then string
		var file, line int64
		if err := rows.Scan(&ev, &file, &line, &then); err != nil {
			return err
		}
		var tf, tl int64
		fmt.Sscanf(then, "%d %d", &tf, &tl)
		out = append(out, Reuse{EventID: ev, First: loc(file, line), Then: loc(tf, tl)})
		return nil
	}, `
			SELECT c.event_id, c.file, c.line, (
			    SELECT d.file || ' ' || d.line FROM capture d
			    WHERE d.event_id = c.event_id AND d.identity <> c.identity AND d.rowid > c.rowid ORDER BY d.rowid LIMIT 1)
			FROM capture c
			JOIN (SELECT event_id, min(rowid) AS first FROM capture GROUP BY event_id
			      HAVING count(DISTINCT identity) > 1 ORDER BY first LIMIT ?) g ON c.rowid = g.first
			ORDER BY c.rowid`, limit)
	if err != nil {
		return out, fmt.Errorf("find reused ids: %w", err)
	}
	return out, nil
}

// keyExamples are the first limit business keys under several ids: how
// many, some of them, and where the key first came.
func (c *CaptureLog) keyExamples(ctx context.Context, loc locate, limit int) ([]KeyIDs, error) {
	var out []KeyIDs
	err := c.query(ctx, func(rows *sql.Rows) error {
		var k KeyIDs
		var first int64
		if err := rows.Scan(&k.Key, &k.IDs, &first, &k.Some); err != nil {
			return err
		}
		k.First = consumer.Location{Line: int(first)}
		out = append(out, k)
		return nil
	}, `
			SELECT business_key, count(DISTINCT event_id), min(rowid) AS first, group_concat(DISTINCT event_id)
			FROM capture WHERE business_key <> '' GROUP BY business_key
			HAVING count(DISTINCT event_id) > 1 ORDER BY first LIMIT ?`, limit)
	if err != nil {
		return out, fmt.Errorf("find keys: %w", err)
	}
	for i := range out {
		var file, line int64
		if err := c.conn.QueryRowContext(ctx, `SELECT file, line FROM capture WHERE rowid = ?`, out[i].First.Line).Scan(&file, &line); err == nil {
			out[i].First = loc(file, line)
		}
	}
	return out, nil
}
