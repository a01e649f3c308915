package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/handler"
)

// CaptureLog is a scratch table of what a capture holds, one row per
// delivery: its id, a hash of its identity, its business key and where it
// came from. It is a TEMP table of the replay's own connection: SQLite keeps
// it in a temporary file (temp_store=FILE, so memory does not grow with the
// capture; the file vanishes with the connection, even after SIGKILL), and
// the rows are written by the goroutine that drives the handler, in the
// batch transaction but outside every delivery's savepoint. One connection
// instead of two: SQLite's allocator is process-wide and guarded by one
// mutex, which two connections working at once contend for. The capture
// findings are aggregate queries over it.
type CaptureLog struct {
	conn *sql.Conn
}

const captureSchema = `PRAGMA temp_store = FILE;
DROP TABLE IF EXISTS temp.capture;
DROP TABLE IF EXISTS temp.capture_files;
CREATE TEMP TABLE capture(
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

// CaptureLog creates an empty capture log on the replay's connection. Its
// rows are written through Batch.Record and Batch.RecordFile.
func (r *ReplayDB) CaptureLog(ctx context.Context) (*CaptureLog, error) {
	if _, err := r.conn.ExecContext(ctx, captureSchema); err != nil {
		return nil, fmt.Errorf("capture log: %w", err)
	}
	return &CaptureLog{conn: r.conn}, nil
}

// Close drops the log's tables.
func (c *CaptureLog) Close() error {
	_, err := c.conn.ExecContext(context.Background(), `DROP TABLE IF EXISTS temp.capture; DROP TABLE IF EXISTS temp.capture_files`)
	return err
}

// captureRows is how many rows one statement of RecordRows inserts: the
// per-statement cost (step, reset, result) is paid once for them all.
const captureRows = 64

// RecordRows writes deliveries of the capture into the capture log, in
// order. It opens the batch transaction when none is open, and must not be
// called while a delivery's transaction is.
func (b *Batch) RecordRows(rows []CaptureRow) error {
	if b.tx.active {
		return errors.New("capture log written inside a delivery")
	}
	if b.captureRow == nil {
		var err error
		if b.captureRow, err = prepare(b.conn, captureInsert(1)); err != nil {
			return fmt.Errorf("capture log: %w", err)
		}
		if b.captureRows, err = prepare(b.conn, captureInsert(captureRows)); err != nil {
			return fmt.Errorf("capture log: %w", err)
		}
	}
	if err := b.openBatch(); err != nil {
		return err
	}
	for len(rows) > 0 {
		p, n := b.captureRow, 1
		if len(rows) >= captureRows {
			p, n = b.captureRows, captureRows
		}
		nv := b.nargs(5 * n)
		for i, r := range rows[:n] {
			nv[5*i].Value = r.EventID
			nv[5*i+1].Value = r.Identity
			nv[5*i+2].Value = r.Key
			nv[5*i+3].Value = int64(r.File)
			nv[5*i+4].Value = int64(r.Line)
		}
		if _, err := p.exec.ExecContext(bg, nv); err != nil {
			return fmt.Errorf("capture log: %w", err)
		}
		rows = rows[n:]
	}
	return nil
}

func captureInsert(n int) string {
	q := `INSERT INTO temp.capture(event_id, identity, business_key, file, line) VALUES (?, ?, ?, ?, ?)`
	return q + strings.Repeat(`, (?, ?, ?, ?, ?)`, n-1)
}

// RecordFile names capture file number n in the capture log.
func (b *Batch) RecordFile(n int, name string) error {
	if b.tx.active {
		return errors.New("capture log written inside a delivery")
	}
	if b.captureFile == nil {
		var err error
		if b.captureFile, err = prepare(b.conn, `INSERT INTO temp.capture_files(id, name) VALUES (?, ?)`); err != nil {
			return fmt.Errorf("capture log: %w", err)
		}
	}
	if err := b.openBatch(); err != nil {
		return err
	}
	if _, err := b.exec(b.captureFile, int64(n), name); err != nil {
		return fmt.Errorf("capture log: %w", err)
	}
	return nil
}

// Findings counts the capture's repeated ids, reused ids and keys under
// several ids, with up to limit examples.
func (c *CaptureLog) Findings(ctx context.Context, limit int) (CaptureFindings, error) {
	var f CaptureFindings
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
	files := map[int64]string{}
	rows, err := c.conn.QueryContext(ctx, `SELECT id, name FROM temp.capture_files`)
	if err != nil {
		return f, err
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return f, err
		}
		files[id] = name
	}
	rows.Close()
	loc := func(file, line int64) handler.Location { return handler.Location{File: files[file], Line: int(line)} }
	if f.IdentityReuse > 0 && limit > 0 {
		rows, err := c.conn.QueryContext(ctx, `
			SELECT c.event_id, c.file, c.line, (
			    SELECT d.file || ' ' || d.line FROM capture d
			    WHERE d.event_id = c.event_id AND d.identity <> c.identity AND d.rowid > c.rowid ORDER BY d.rowid LIMIT 1)
			FROM capture c
			JOIN (SELECT event_id, min(rowid) AS first FROM capture GROUP BY event_id
			      HAVING count(DISTINCT identity) > 1 ORDER BY first LIMIT ?) g ON c.rowid = g.first
			ORDER BY c.rowid`, limit)
		if err != nil {
			return f, fmt.Errorf("find reused ids: %w", err)
		}
		for rows.Next() {
			var ev, then string
			var file, line int64
			if err := rows.Scan(&ev, &file, &line, &then); err != nil {
				rows.Close()
				return f, err
			}
			var tf, tl int64
			fmt.Sscanf(then, "%d %d", &tf, &tl)
			f.Reuse = append(f.Reuse, Reuse{EventID: ev, First: loc(file, line), Then: loc(tf, tl)})
		}
		rows.Close()
	}
	if f.KeysWithSeveralIDs > 0 && limit > 0 {
		rows, err := c.conn.QueryContext(ctx, `
			SELECT business_key, count(DISTINCT event_id), min(rowid) AS first, group_concat(DISTINCT event_id)
			FROM capture WHERE business_key <> '' GROUP BY business_key
			HAVING count(DISTINCT event_id) > 1 ORDER BY first LIMIT ?`, limit)
		if err != nil {
			return f, fmt.Errorf("find keys: %w", err)
		}
		for rows.Next() {
			var k KeyIDs
			var first int64
			if err := rows.Scan(&k.Key, &k.IDs, &first, &k.Some); err != nil {
				rows.Close()
				return f, err
			}
			k.First = handler.Location{Line: int(first)}
			f.Keys = append(f.Keys, k)
		}
		rows.Close()
		for i := range f.Keys {
			var file, line int64
			if err := c.conn.QueryRowContext(ctx, `SELECT file, line FROM capture WHERE rowid = ?`, f.Keys[i].First.Line).Scan(&file, &line); err == nil {
				f.Keys[i].First = loc(file, line)
			}
		}
	}
	return f, nil
}
