package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/ledger"
)

// List streams every entry behind the capture findings out of the capture
// log: one sort of the log per finding, whatever the number of entries.
func (c *CaptureLog) List(ctx context.Context, each func(ledger.Listed) error) error {
	if err := c.wait(); err != nil {
		return err
	}
	loc, err := c.locator(ctx)
	if err != nil {
		return err
	}
	for _, list := range []func(context.Context, locate, func(ledger.Listed) error) error{c.repeatedIDs, c.reusedIDs, c.keysWithIDs} {
		if err := list(ctx, loc, each); err != nil {
			return err
		}
	}
	return nil
}

// locate is where a line of a capture file is, by the file's id.
type locate func(file, line int64) consumer.Location

// repeatedIDs lists the ids delivered more than once, where each first
// appears.
func (c *CaptureLog) repeatedIDs(ctx context.Context, loc locate, each func(ledger.Listed) error) error {
	err := c.query(ctx, func(rows *sql.Rows) error {
		var l ledger.Listed
		var file, line int64
		if err := rows.Scan(&l.ID, &l.Deliveries, &file, &line); err != nil {
			return err
		}
		l.Finding, l.First = ledger.ListedRepeatedID, loc(file, line)
		return each(l)
	}, `SELECT event_id, n, file, line FROM (
		SELECT event_id, count(*) AS n, min(rowid) AS first, file, line FROM capture GROUP BY event_id)
		WHERE n > 1 ORDER BY first`)
	if err != nil {
		return fmt.Errorf("list repeated ids: %w", err)
	}
	return nil
}

// reusedIDs lists the ids delivered with another payload than the first
// time: the first delivery of the id, and the first that differs from
// it.
func (c *CaptureLog) reusedIDs(ctx context.Context, loc locate, each func(ledger.Listed) error) error {
	err := c.query(ctx, func(rows *sql.Rows) error {
		l := ledger.Listed{Finding: ledger.ListedIdentityReuse}
		var f1, l1, f2, l2 int64
		if err := rows.Scan(&l.ID, &f1, &l1, &f2, &l2); err != nil {
			return err
		}
		l.First, l.Then = loc(f1, l1), loc(f2, l2)
		return each(l)
	}, `SELECT event_id, first_file, first_line, file, line FROM (
		SELECT event_id, min(rowid) AS at, first_rowid, first_file, first_line, file, line FROM (
			SELECT rowid, event_id, identity, file, line,
			       first_value(identity) OVER w AS first_identity,
			       first_value(rowid) OVER w AS first_rowid,
			       first_value(file) OVER w AS first_file,
			       first_value(line) OVER w AS first_line
			FROM capture WINDOW w AS (PARTITION BY event_id ORDER BY rowid))
		WHERE identity <> first_identity GROUP BY event_id)
		ORDER BY first_rowid`)
	if err != nil {
		return fmt.Errorf("list reused ids: %w", err)
	}
	return nil
}

// keysWithIDs lists the business keys under several ids, each with its
// ids in the order they first appear.
func (c *CaptureLog) keysWithIDs(ctx context.Context, loc locate, each func(ledger.Listed) error) error {
	var cur *ledger.Listed
	err := c.query(ctx, func(rows *sql.Rows) error {
		var key, id string
		var file, line int64
		if err := rows.Scan(&key, &id, &file, &line); err != nil {
			return err
		}
		if cur != nil && cur.Key != key {
			if err := each(*cur); err != nil {
				return err
			}
			cur = nil
		}
		if cur == nil {
			cur = &ledger.Listed{Finding: ledger.ListedKeyIDs, Key: key, First: loc(file, line)}
		}
		cur.IDs = append(cur.IDs, id)
		return nil
	}, `SELECT business_key, event_id, file, line FROM (
		SELECT business_key, event_id, first, file, line,
		       min(first) OVER (PARTITION BY business_key) AS key_first,
		       count(*) OVER (PARTITION BY business_key) AS ids
		FROM (SELECT business_key, event_id, min(rowid) AS first, file, line
		      FROM capture WHERE business_key <> '' GROUP BY business_key, event_id))
		WHERE ids > 1 ORDER BY key_first, first`)
	if err == nil && cur != nil {
		err = each(*cur)
	}
	if err != nil {
		return fmt.Errorf("list keys with several ids: %w", err)
	}
	return nil
}

// query runs q and calls scan for each row.
func (c *CaptureLog) query(ctx context.Context, scan func(*sql.Rows) error, q string, args ...any) error {
	rows, err := c.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
