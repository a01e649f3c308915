package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"

	"github.com/redeliver/redeliver/pkg/handler"
)

// CaptureLog is a scratch database of what a capture holds, one row per
// delivery: its id, a hash of its identity, its business key and where it
// came from. It lives in a temporary file (so memory does not grow with the
// capture) and has its own connection, so the goroutine that reads the
// capture fills it while the handler works on the other core. The capture
// findings are aggregate queries over it.
type CaptureLog struct {
	db   *sql.DB
	conn *sql.Conn
	path string
}

const captureSchema = `CREATE TABLE capture(
  event_id TEXT NOT NULL,
  identity INTEGER NOT NULL,
  business_key TEXT NOT NULL,
  file INTEGER NOT NULL,
  line INTEGER NOT NULL
);
CREATE TABLE files(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL
)`

// OpenCaptureLog creates an empty capture log in a temporary file.
func OpenCaptureLog(ctx context.Context) (*CaptureLog, error) {
	f, err := os.CreateTemp("", "redeliver-capture-*.db")
	if err != nil {
		return nil, fmt.Errorf("capture log: %w", err)
	}
	path := f.Name()
	f.Close()
	// Scratch data: no journal, no syncing; it is deleted on Close.
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("capture log: %w", err)
	}
	db.SetMaxOpenConns(1)
	c := &CaptureLog{db: db, path: path}
	if _, err := db.ExecContext(ctx, captureSchema); err != nil {
		c.Close()
		return nil, fmt.Errorf("capture log: %w", err)
	}
	if c.conn, err = db.Conn(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("capture log: %w", err)
	}
	// The one connection holds the file open: unlinking it now means even a
	// replay killed with SIGKILL leaves no scratch file behind (where the
	// system allows it; elsewhere Close removes it).
	if os.Remove(path) == nil {
		c.path = ""
	}
	return c, nil
}

// Close closes the log and deletes its file.
func (c *CaptureLog) Close() error {
	if c.conn != nil {
		c.conn.Close()
	}
	err := c.db.Close()
	if c.path != "" {
		os.Remove(c.path)
	}
	return err
}

// Write calls f with a writer on the log's connection and commits what it wrote.
func (c *CaptureLog) Write(f func(w *CaptureWriter) error) error {
	return c.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return errors.New("sqlite driver connection expected")
		}
		w := &CaptureWriter{args: make([]driver.NamedValue, 5)}
		for i := range w.args {
			w.args[i].Ordinal = i + 1
		}
		var err error
		for _, s := range []struct {
			p **prepared
			q string
		}{
			{&w.begin, `BEGIN`}, {&w.commit, `COMMIT`},
			{&w.row, `INSERT INTO capture(event_id, identity, business_key, file, line) VALUES (?, ?, ?, ?, ?)`},
			{&w.file, `INSERT INTO files(id, name) VALUES (?, ?)`},
		} {
			if *s.p, err = prepare(conn, s.q); err != nil {
				w.close()
				return fmt.Errorf("capture log: %w", err)
			}
		}
		defer w.close()
		ferr := f(w)
		if err := w.flush(); err != nil && ferr == nil {
			ferr = err
		}
		return ferr
	})
}

// CaptureWriter appends to a capture log, committing every few thousand rows.
type CaptureWriter struct {
	begin, commit, row, file *prepared
	args                     []driver.NamedValue
	open                     bool
	n                        int
}

func (w *CaptureWriter) close() {
	for _, p := range []*prepared{w.begin, w.commit, w.row, w.file} {
		if p != nil {
			p.st.Close()
		}
	}
}

func (w *CaptureWriter) exec(p *prepared, args ...any) error {
	if !w.open {
		if _, err := w.begin.exec.ExecContext(bg, nil); err != nil {
			return err
		}
		w.open = true
	}
	nv := w.args[:len(args)]
	for i, a := range args {
		nv[i].Value = a
	}
	if _, err := p.exec.ExecContext(bg, nv); err != nil {
		return err
	}
	if w.n++; w.n >= 20000 {
		return w.flush()
	}
	return nil
}

func (w *CaptureWriter) flush() error {
	if !w.open {
		return nil
	}
	w.open, w.n = false, 0
	_, err := w.commit.exec.ExecContext(bg, nil)
	return err
}

// Record writes one delivery of the capture.
func (w *CaptureWriter) Record(eventID string, identity int64, key string, file, line int) error {
	return w.exec(w.row, eventID, identity, key, int64(file), int64(line))
}

// RecordFile names capture file number n.
func (w *CaptureWriter) RecordFile(n int, name string) error {
	return w.exec(w.file, int64(n), name)
}

// CaptureFindings are what the capture itself holds, before any handler ran.
type CaptureFindings struct {
	Deliveries         int64
	DistinctIDs        int64
	RepeatedIDs        int64 // ids delivered more than once
	IdentityReuse      int64 // ids delivered with more than one payload identity
	KeysWithSeveralIDs int64 // business keys seen under more than one id
	Reuse              []Reuse
	Keys               []KeyIDs
}

// Reuse is an id delivered with a different payload than the first time.
type Reuse struct {
	EventID     string
	First, Then handler.Location
}

// KeyIDs is a business key seen under several ids.
type KeyIDs struct {
	Key   string
	IDs   int64
	First handler.Location
	Some  string // the first few ids
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
	rows, err := c.conn.QueryContext(ctx, `SELECT id, name FROM files`)
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
