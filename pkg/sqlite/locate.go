package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// Where returns where the capture delivered each of the given event ids
// and business keys: up to limit lines each, in capture order. Reports use
// it to point a broken invariant at the capture lines behind it. One scan
// of the log answers all of them, so it costs the same for a few ids as for
// one.
func (c *CaptureLog) Where(ctx context.Context, ids, keys []string, limit int) (byID, byKey map[string][]consumer.Location, err error) {
	if err := c.wait(); err != nil {
		return nil, nil, err
	}
	byID, byKey = map[string][]consumer.Location{}, map[string][]consumer.Location{}
	if len(ids)+len(keys) == 0 || limit <= 0 {
		return byID, byKey, nil
	}
	files := map[int64]string{}
	rows, err := c.conn.QueryContext(ctx, `SELECT id, name FROM temp.capture_files`)
	if err != nil {
		return nil, nil, fmt.Errorf("locate deliveries: %w", err)
	}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			rows.Close()
			return nil, nil, err
		}
		files[id] = name
	}
	rows.Close()
	var args []any
	in := func(vals []string) string {
		if len(vals) == 0 {
			return "NULL"
		}
		for _, v := range vals {
			args = append(args, v)
		}
		return strings.TrimSuffix(strings.Repeat("?, ", len(vals)), ", ")
	}
	q := `SELECT event_id, business_key, file, line FROM temp.capture WHERE event_id IN (` + in(ids) + `) OR business_key IN (` + in(keys) + `) ORDER BY rowid`
	rows, err = c.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("locate deliveries: %w", err)
	}
	defer rows.Close()
	wantID, wantKey := stringSet(ids), stringSet(keys)
	for rows.Next() {
		var ev, key string
		var file, line int64
		if err := rows.Scan(&ev, &key, &file, &line); err != nil {
			return nil, nil, err
		}
		at := consumer.Location{File: files[file], Line: int(line)}
		if wantID[ev] && len(byID[ev]) < limit {
			byID[ev] = append(byID[ev], at)
		}
		if wantKey[key] && len(byKey[key]) < limit {
			byKey[key] = append(byKey[key], at)
		}
	}
	return byID, byKey, rows.Err()
}

func stringSet(vals []string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[v] = true
	}
	return m
}
