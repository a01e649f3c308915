package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Snapshot copies what the handler's tables hold into a private in-memory
// database attached to the database's own connection, and returns restore,
// which puts that copy back (every row, with its rowid, so the next effect
// id and the marker order are those of the moment of the snapshot), and
// release, which drops the copy. The database itself is not touched: a
// run explores a check from the state its earlier checks left without
// running them again.
func (d *DB) Snapshot(ctx context.Context) (restore func(context.Context) error, release func(), err error) {
	var name [8]byte
	if _, err := rand.Read(name[:]); err != nil {
		return nil, nil, err
	}
	schema := "snap_" + hex.EncodeToString(name[:])
	uri := "file:/redeliver-" + schema + "?vfs=memdb"
	if _, err := d.anchor.ExecContext(ctx, `ATTACH DATABASE ? AS `+schema, uri); err != nil {
		return nil, nil, fmt.Errorf("snapshot: %w", err)
	}
	release = func() { _, _ = d.anchor.ExecContext(context.WithoutCancel(ctx), `DETACH DATABASE `+schema) }
	tables := []string{`"processed"`, `"` + d.effect + `"`}
	for _, t := range tables {
		if _, err := d.anchor.ExecContext(ctx, `CREATE TABLE `+schema+`.`+t+` AS SELECT rowid AS redeliver_rowid, * FROM main.`+t); err != nil {
			release()
			return nil, nil, fmt.Errorf("snapshot: %w", err)
		}
	}
	cols := map[string]string{
		`"processed"`:        `event_id, consumer, identity, business_key, processed_at`,
		`"` + d.effect + `"`: `event_id, consumer, business_key, payload, created_at`,
	}
	restore = func(ctx context.Context) error {
		tx, err := d.anchor.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
		defer tx.Rollback()
		for _, t := range tables {
			c := cols[t]
			for _, q := range []string{
				`DELETE FROM main.` + t,
				`INSERT INTO main.` + t + `(rowid, ` + c + `) SELECT redeliver_rowid, ` + c + ` FROM ` + schema + `.` + t + ` ORDER BY redeliver_rowid`,
			} {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("restore snapshot: %w", err)
				}
			}
		}
		if d.q.version != nil {
			defer d.q.version.Add(1)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("restore snapshot: %w", err)
		}
		return nil
	}
	return restore, release, nil
}
