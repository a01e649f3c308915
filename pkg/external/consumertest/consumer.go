// Package consumertest is a small consumer for redeliver's own tests of
// target mode: an HTTP service or a process per delivery on a SQLite
// file, safe or with a known flaw. The example consumers users read live
// in examples/; this one is kept tiny and test-only.
//
// It imports no other package of this module.
package consumertest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

const schema = `
CREATE TABLE IF NOT EXISTS processed (event_id TEXT PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS payments (order_id TEXT NOT NULL, event_id TEXT NOT NULL, amount INTEGER);
CREATE TABLE IF NOT EXISTS balances (account TEXT PRIMARY KEY, balance INTEGER NOT NULL, updated_at TEXT NOT NULL);`

type consumer struct {
	db   *sql.DB
	flaw string
	work time.Duration
}

type event struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// Main runs the consumer with args and returns its exit status.
//
//	--listen ADDR   serve HTTP (structured or binary CloudEvents); GET /healthz
//	--exec          handle one structured CloudEvent from stdin (exit 0, 65, 66)
//	--db PATH       the SQLite file
//	--flaw NAME     none | ack-before-commit | check-then-act | overwrite (empty: safe);
//	                add: the amount is added to balances(account = orderId) on
//	                every delivery; touch: added once, but a duplicate stamps
//	                the balance's updated_at
//	--answer N      answer every delivery with HTTP status N, doing nothing
//	--rate-limit S  answer 429 with Retry-After: S until S seconds after an
//	                event's first delivery, then handle it
//	--reset-first   reset the connection of each event's first delivery
//	--work D        time spent inside the handler
//	--linger D      time spent after the work is committed, before the
//	                answer: a kill then comes after the commit
//	--linger-once P linger only in the first delivery to create the file
//	                P, so that a redelivery answers at once
//	--pidfile PATH  write the process id there
//	--die-after N   exit with status 3 after N deliveries, by itself
//	--silent-ready  print no "listening" line
func Main(args []string) int {
	var o options
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "", "")
	fs.BoolVar(&o.execMode, "exec", false, "")
	fs.StringVar(&o.dbPath, "db", "", "")
	fs.StringVar(&o.flaw, "flaw", "", "")
	fs.DurationVar(&o.work, "work", 0, "")
	fs.DurationVar(&o.linger, "linger", 0, "")
	fs.StringVar(&o.lingerOnce, "linger-once", "", "")
	fs.StringVar(&o.pidfile, "pidfile", "", "")
	fs.IntVar(&o.dieAfter, "die-after", 0, "")
	fs.BoolVar(&o.hang, "hang", false, "")
	fs.IntVar(&o.answer, "answer", 0, "")
	fs.IntVar(&o.rateLimit, "rate-limit", 0, "")
	fs.BoolVar(&o.resetFirst, "reset-first", false, "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.pidfile != "" {
		os.WriteFile(o.pidfile, []byte(fmt.Sprint(os.Getpid())), 0o644)
	}
	db, err := sql.Open("sqlite", "file:"+o.dbPath+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	if _, err := db.Exec(schema); err != nil {
		fmt.Fprintln(os.Stderr, "schema:", err)
		return 1
	}
	c := &consumer{db: db, flaw: o.flaw, work: o.work}
	if o.execMode {
		return c.once(o)
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	mux.HandleFunc("POST /events", c.events(o))
	fmt.Println("listening on", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return 1
}

// options are the consumer's flags.
type options struct {
	listen, dbPath, flaw, lingerOnce, pidfile string
	execMode, hang, resetFirst                bool
	work, linger                              time.Duration
	dieAfter, answer, rateLimit               int
}

// once handles the one event on stdin (--exec) and exits: 0 done, 65 a
// conflict, 66 a bad event, 1 an error.
func (c *consumer) once(o options) int {
	var ev event
	if err := json.NewDecoder(os.Stdin).Decode(&ev); err != nil {
		fmt.Fprintln(os.Stderr, "bad event:", err)
		return 66
	}
	status, err := c.handle(context.Background(), ev, nil)
	time.Sleep(lingerFor(o.linger, o.lingerOnce))
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	case status == http.StatusConflict:
		return 65
	}
	return 0
}

// events is the handler of POST /events: one delivery each, with the
// faults the flags ask for.
func (c *consumer) events(o options) http.HandlerFunc {
	deliveries := 0
	first := map[string]time.Time{} // each event's first delivery
	var firstMu sync.Mutex
	return func(w http.ResponseWriter, r *http.Request) {
		deliveries++
		if o.dieAfter > 0 && deliveries > o.dieAfter {
			fmt.Fprintln(os.Stderr, "giving up: out of memory (simulated)")
			os.Exit(3)
		}
		if o.hang {
			time.Sleep(time.Hour)
		}
		if o.answer != 0 {
			w.WriteHeader(o.answer)
			return
		}
		var ev event
		if id := r.Header.Get("ce-id"); id != "" {
			ev.ID = id
			ev.Data, _ = io.ReadAll(r.Body)
		} else if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		firstMu.Lock()
		at, seen := first[ev.ID]
		if !seen {
			at = time.Now()
			first[ev.ID] = at
		}
		firstMu.Unlock()
		if o.resetFirst && !seen {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0) // a reset, not a close
				conn.Close()
			}
			return
		}
		if wait := time.Duration(o.rateLimit) * time.Second; wait > 0 && time.Since(at) < wait {
			w.Header().Set("Retry-After", fmt.Sprint(o.rateLimit))
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		status, err := c.handle(r.Context(), ev, w)
		time.Sleep(lingerFor(o.linger, o.lingerOnce))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			status = 500
		}
		if status != 0 {
			w.WriteHeader(status)
		}
	}
}

// handle processes one event. With ack-before-commit it answers on w before
// the work is done and returns status 0.
func (c *consumer) handle(ctx context.Context, ev event, w http.ResponseWriter) (int, error) {
	var d struct {
		OrderID string `json:"orderId"`
		Amount  int    `json:"amount"`
	}
	json.Unmarshal(ev.Data, &d)
	payload := string(ev.Data)
	switch c.flaw {
	case "add", "touch":
		return c.balance(ctx, ev.ID, payload, d.OrderID, d.Amount)
	case "none":
		time.Sleep(c.work)
		_, err := c.db.ExecContext(ctx, `INSERT INTO payments VALUES (?, ?, ?)`, d.OrderID, ev.ID, d.Amount)
		return 201, err
	case "check-then-act":
		var n int
		c.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM processed WHERE event_id = ?`, ev.ID).Scan(&n)
		if n > 0 {
			return 200, nil
		}
		time.Sleep(c.work)
		if _, err := c.db.ExecContext(ctx, `INSERT INTO payments VALUES (?, ?, ?)`, d.OrderID, ev.ID, d.Amount); err != nil {
			return 0, err
		}
		_, err := c.db.ExecContext(ctx, `INSERT OR IGNORE INTO processed VALUES (?, ?)`, ev.ID, payload)
		return 201, err
	case "ack-before-commit":
		if w != nil {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
		}
		time.Sleep(c.work)
		_, err := c.safe(context.Background(), ev.ID, payload, d.OrderID, d.Amount)
		return 0, err
	}
	return c.safe(ctx, ev.ID, payload, d.OrderID, d.Amount)
}

// balance adds the amount to the account's balance (an upsert). With
// add, every delivery adds it again; with touch, a marker keeps it to
// once, but a duplicate stamps updated_at.
func (c *consumer) balance(ctx context.Context, id, payload, account string, amount int) (int, error) {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	now := time.Now().Format(time.RFC3339Nano)
	if c.flaw == "touch" {
		res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO processed VALUES (?, ?)`, id, payload)
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE balances SET updated_at = ? WHERE account = ?`, now, account); err != nil {
				return 0, err
			}
			return 200, tx.Commit()
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO balances VALUES (?, ?, ?)
		ON CONFLICT (account) DO UPDATE SET balance = balance + excluded.balance, updated_at = excluded.updated_at`, account, amount, now); err != nil {
		return 0, err
	}
	return 200, tx.Commit()
}

// safe is marker and effect in one transaction; a redelivery with another
// payload is a conflict.
func (c *consumer) safe(ctx context.Context, id, payload, order string, amount int) (int, error) {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var stored string
	switch err := tx.QueryRowContext(ctx, `SELECT payload FROM processed WHERE event_id = ?`, id).Scan(&stored); {
	case err == nil && stored == payload:
		return 200, nil
	case err == nil && c.flaw == "overwrite":
		// The flaw: a conflicting redelivery overwrites the effect.
		if _, err := tx.ExecContext(ctx, `UPDATE payments SET amount = ? WHERE event_id = ?`, amount, id); err != nil {
			return 0, err
		}
		return 409, tx.Commit()
	case err == nil:
		return 409, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO processed VALUES (?, ?)`, id, payload); err != nil {
		return 0, err
	}
	time.Sleep(c.work)
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments VALUES (?, ?, ?)`, order, id, amount); err != nil {
		return 0, err
	}
	return 201, tx.Commit()
}

// lingerFor is how long a delivery lingers after its commit: d, or with
// once set only in the first delivery to create that file.
func lingerFor(d time.Duration, once string) time.Duration {
	if once == "" {
		return d
	}
	f, err := os.OpenFile(once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0
	}
	f.Close()
	return d
}
