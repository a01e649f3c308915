package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Snapshot copies what the handler's tables hold into two tables of the
// file's schema beside them, with where their identity sequences stand, and
// returns restore, which puts that copy back in one transaction (every row
// with its seq and id, the sequences where they stood, so the next effect
// id and the marker order are those of the moment of the snapshot), and
// release, which drops the copy. A run explores a check from the state its
// earlier checks left without running them again.
func (d *DB) Snapshot(ctx context.Context) (restore func(context.Context) error, release func(), err error) {
	tables := []struct{ live, copy, idCol string }{
		{d.schema + ".processed", d.schema + ".redeliver_snapshot_processed", "seq"},
		{d.schema + "." + pgx.Identifier{d.effect}.Sanitize(), d.schema + ".redeliver_snapshot_effect", "id"},
	}
	release = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, t := range tables {
			_, _ = d.srv.pool.Exec(ctx, `DROP TABLE IF EXISTS `+t.copy)
		}
	}
	type seqAt struct {
		name     string
		last     int64
		isCalled bool
	}
	var seqs []seqAt
	for _, t := range tables {
		if _, err := d.srv.pool.Exec(ctx, `CREATE TABLE `+t.copy+` AS SELECT * FROM `+t.live); err != nil {
			release()
			return nil, nil, d.srv.runError("snapshot schema "+d.name, err)
		}
		var s seqAt
		if err := d.srv.pool.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, $2)`, t.live, t.idCol).Scan(&s.name); err != nil {
			release()
			return nil, nil, d.srv.runError("snapshot schema "+d.name, err)
		}
		if err := d.srv.pool.QueryRow(ctx, `SELECT last_value, is_called FROM `+s.name).Scan(&s.last, &s.isCalled); err != nil {
			release()
			return nil, nil, d.srv.runError("snapshot schema "+d.name, err)
		}
		seqs = append(seqs, s)
	}
	restore = func(ctx context.Context) error {
		tx, err := d.srv.pool.BeginTx(ctx, txOptions)
		if err != nil {
			return d.srv.runError("restore schema "+d.name, err)
		}
		defer tx.Rollback(context.WithoutCancel(ctx))
		if _, err := tx.Exec(ctx, `TRUNCATE `+tables[0].live+`, `+tables[1].live); err != nil {
			return d.srv.runError("restore schema "+d.name, err)
		}
		for i, t := range tables {
			if _, err := tx.Exec(ctx, `INSERT INTO `+t.live+` OVERRIDING SYSTEM VALUE SELECT * FROM `+t.copy); err != nil {
				return d.srv.runError("restore schema "+d.name, err)
			}
			if _, err := tx.Exec(ctx, `SELECT setval($1, $2, $3)`, seqs[i].name, seqs[i].last, seqs[i].isCalled); err != nil {
				return d.srv.runError("restore schema "+d.name, err)
			}
		}
		return d.srv.runError("restore schema "+d.name, tx.Commit(ctx))
	}
	return restore, release, nil
}
