package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"golang.org/x/sync/errgroup"
)

// SplitDB is a replay that keeps nothing, handled in parts side by side:
// each part a private database of its own (see openPrivate) with its share
// of the page cache and of the marker filter, driven by a goroutine of its
// own. The replay puts every delivery of an event id in the same part, so
// each part holds whole events: what the handler decides for a delivery
// depends only on its event's rows, and the per-event invariants hold in
// the whole replay exactly when they hold in every part.
//
// What crosses events is answered over all parts: the effect count, the
// business keys (one effect per key), and the effect ids. A part numbers
// each effect with the place of its delivery in the whole replay
// (Batch.SetOrder), so the parts' ids interleave as the deliveries did;
// the ids a report names are then counted back to the ones a single store
// handling the deliveries in that order gives: 1 for the first effect
// written, 2 for the second (effects are never deleted but by the undo of
// the delivery that wrote them, so the ids of one store are 1 to n).
type SplitDB struct {
	parts  []*ReplayDB
	effect string
	log    *CaptureLog
}

// OpenSplit opens a replay in n parts that keeps nothing.
func OpenSplit(ctx context.Context, cfg handler.Config, n int) (*SplitDB, error) {
	if n < 1 {
		return nil, errors.New("a replay needs at least one part")
	}
	s := &SplitDB{effect: cfg.Effect}
	for i := 0; i < n; i++ {
		r, err := openReplay(ctx, Memory, cfg, n)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.parts = append(s.parts, r)
	}
	return s, nil
}

// Parts is how many parts the replay is handled in.
func (s *SplitDB) Parts() int { return len(s.parts) }

// Close closes every part and the capture log.
func (s *SplitDB) Close() error {
	var err error
	for _, r := range s.parts {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// CaptureLog creates the replay's capture log, written through RecordRows
// and RecordFile.
func (s *SplitDB) CaptureLog(ctx context.Context) (*CaptureLog, error) {
	c, err := s.parts[0].CaptureLog(ctx)
	s.log = c
	return c, err
}

// RecordRows writes deliveries of the capture into the capture log, in order.
func (s *SplitDB) RecordRows(rows []CaptureRow) error { return s.log.RecordRows(rows) }

// RecordFile names capture file number n in the capture log.
func (s *SplitDB) RecordFile(n int, name string) error { return s.log.RecordFile(n, name) }

// RunParts calls f for every part, each on a goroutine of its own with the
// part's group-commit store, and returns when all have returned. The first
// error cancels the context the others were given, and is returned.
func (s *SplitDB) RunParts(ctx context.Context, f func(ctx context.Context, part int, b *Batch) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for i, r := range s.parts {
		g.Go(func() error { return r.Run(ctx, 0, func(b *Batch) error { return f(ctx, i, b) }) })
	}
	return g.Wait()
}

// CountEffects returns the number of effects in all parts.
func (s *SplitDB) CountEffects(ctx context.Context) (int64, error) {
	var n int64
	for _, r := range s.parts {
		c, err := r.CountEffects(ctx)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// KeyStats counts the business keys the effects of all parts carry, the
// most effects one key has, and how many keys have more than one.
func (s *SplitDB) KeyStats(ctx context.Context) (keys, most, several int64, err error) {
	err = s.eachKey(ctx, func(key string, ids []int64, _ []string) {
		keys++
		most = max(most, int64(len(ids)))
		if len(ids) > 1 {
			several++
		}
	})
	return keys, most, several, err
}

// Invariants is ReplayDB.Invariants over all parts.
func (s *SplitDB) Invariants(ctx context.Context, g invariant.Guard, limit int) ([]Broken, error) {
	return s.invariants(ctx, g, false, limit)
}

// KeyedInvariants is ReplayDB.KeyedInvariants over all parts.
func (s *SplitDB) KeyedInvariants(ctx context.Context, g invariant.Guard, limit int) ([]Broken, error) {
	return s.invariants(ctx, g, true, limit)
}

// splitFinding is an example of a broken invariant before its effect ids
// are counted back and it is worded.
type splitFinding struct {
	first    int64 // its first effect id, by which the examples are ordered
	facts    invariant.Facts
	ids      []int64
	eventIDs []string
}

// invariants answers the queries of ReplayDB.invariants (for the strategies
// a split replay runs: none dedups on the business key) part by part, and
// merges the answers.
func (s *SplitDB) invariants(ctx context.Context, g invariant.Guard, keyed bool, limit int) ([]Broken, error) {
	if g.UsesKey() {
		return nil, fmt.Errorf("a replay with strategy %s is not split", g)
	}
	checks := func(inv *invariant.Invariant) bool { return inv.CheckedBy(invariant.Replay, g) }
	pairs := checks(invariant.LostEffect) && checks(invariant.MissingMarker)
	a, err := s.answers(ctx, pairs, checks(invariant.DuplicateKey) || keyed, limit)
	if err != nil {
		return nil, err
	}
	return s.broken(ctx, a, pairs)
}

// splitAnswers are the answers of the parts, merged: duplicate effects,
// duplicate keys and the unmatched effects and markers, each counted,
// and the first limit of each kept as examples.
type splitAnswers struct {
	dups, keys         []splitFinding
	dupCount, keyCount int64
	lost, missing      []unmatchedRow
	nLost, nMiss       int64
}

// answers asks each part for its duplicate effects and, with pairs, its
// unmatched rows (the parts at once), and with keys, the duplicate keys
// across all of them, then merges what they answer.
func (s *SplitDB) answers(ctx context.Context, pairs, keys bool, limit int) (splitAnswers, error) {
	type part struct {
		splitAnswers
		err error
	}
	parts := make([]part, len(s.parts))
	var wg sync.WaitGroup
	for i, r := range s.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &parts[i]
			p.dupCount, p.dups, p.err = r.duplicateEffects(ctx, limit)
			if p.err == nil && pairs {
				p.nLost, p.nMiss, p.lost, p.missing, p.err = r.unmatchedRows(ctx, r.conn, limit)
			}
		}()
	}
	var a splitAnswers
	var kerr error
	if keys {
		kerr = s.eachKey(ctx, func(key string, ids []int64, events []string) {
			if len(ids) < 2 {
				return
			}
			a.keyCount++
			a.keys = append(a.keys, splitFinding{first: ids[0], ids: ids, eventIDs: events,
				facts: invariant.Facts{Key: key, Table: s.effect, Rows: int64(len(ids))}})
			if len(a.keys) > 4*limit+16 {
				a.keys = firstFindings(a.keys, limit)
			}
		})
	}
	wg.Wait()
	if kerr != nil {
		return a, fmt.Errorf("check %s: %w", invariant.DuplicateKey, kerr)
	}
	for _, p := range parts {
		if p.err != nil {
			return a, p.err
		}
		a.dups, a.dupCount = append(a.dups, p.dups...), a.dupCount+p.dupCount
		a.lost, a.missing = append(a.lost, p.lost...), append(a.missing, p.missing...)
		a.nLost, a.nMiss = a.nLost+p.nLost, a.nMiss+p.nMiss
	}
	a.dups, a.keys = firstFindings(a.dups, limit), firstFindings(a.keys, limit)
	a.lost, a.missing = firstUnmatched(a.lost, limit), firstUnmatched(a.missing, limit)
	return a, nil
}

// broken words the merged answers as broken invariants, every effect id
// they name counted back to its place in the whole replay.
func (s *SplitDB) broken(ctx context.Context, a splitAnswers, pairs bool) ([]Broken, error) {
	var named []int64
	for _, fs := range [][]splitFinding{a.dups, a.keys} {
		for _, f := range fs {
			named = append(named, f.ids...)
		}
	}
	for _, m := range a.missing {
		named = append(named, m.id)
	}
	rank, err := s.ranks(ctx, named)
	if err != nil {
		return nil, err
	}

	var out []Broken
	if b, ok := brokenBy(invariant.DuplicateEffect, a.dupCount, a.dups, rank); ok {
		out = append(out, b)
	}
	if b, ok := brokenBy(invariant.DuplicateKey, a.keyCount, a.keys, rank); ok {
		out = append(out, b)
	}
	if !pairs {
		return out, nil
	}
	for _, u := range []struct {
		inv   *invariant.Invariant
		count int64
		rows  []unmatchedRow
	}{{invariant.LostEffect, a.nLost, a.lost}, {invariant.MissingMarker, a.nMiss, a.missing}} {
		if u.count == 0 {
			continue
		}
		b := Broken{Invariant: u.inv.Name, Count: u.count}
		for _, m := range u.rows {
			f := invariant.Facts{Event: m.event, Consumer: m.consumer, Table: s.effect}
			if u.inv == invariant.MissingMarker {
				f.IDs = rankedIDs(rank, []int64{m.id})
			}
			b.Examples = append(b.Examples, invariant.Violation{Invariant: u.inv.Name, EventID: m.event, Consumer: m.consumer, Detail: u.inv.Say(f)})
		}
		out = append(out, b)
	}
	return out, nil
}

// brokenBy words the findings of inv, count in all, as the invariant
// broken, their effect ids counted back by rank. ok is false when count
// is 0: the invariant held.
func brokenBy(inv *invariant.Invariant, count int64, fs []splitFinding, rank map[int64]int64) (b Broken, ok bool) {
	if count == 0 {
		return Broken{}, false
	}
	b = Broken{Invariant: inv.Name, Count: count}
	for _, f := range fs {
		f.facts.IDs = rankedIDs(rank, f.ids)
		f.facts.Events = f.eventIDs
		if f.facts.Key != "" {
			b.Keys = append(b.Keys, f.facts.Key)
		}
		b.Examples = append(b.Examples, invariant.Violation{Invariant: inv.Name, EventID: f.facts.Event, Consumer: f.facts.Consumer, Detail: inv.Say(f.facts)})
	}
	return b, true
}

// rankedIDs words effect ids as their places in the whole replay, rank.
func rankedIDs(rank map[int64]int64, xs []int64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatInt(rank[x], 10)
	}
	return out
}

// firstFindings keeps the limit findings with the first effect ids, in
// that order.
func firstFindings(fs []splitFinding, limit int) []splitFinding {
	sort.Slice(fs, func(i, j int) bool { return fs[i].first < fs[j].first })
	if len(fs) > limit {
		fs = fs[:limit]
	}
	return fs
}

// firstUnmatched keeps the limit rows first by event id and consumer, the
// order ReplayDB.unmatched walks them in.
func firstUnmatched(rows []unmatchedRow, limit int) []unmatchedRow {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].event != rows[j].event {
			return rows[i].event < rows[j].event
		}
		return rows[i].consumer < rows[j].consumer
	})
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows
}

// duplicateEffects counts the events with more than one effect row in the
// part, and returns the first limit of them by their first effect id.
func (r *ReplayDB) duplicateEffects(ctx context.Context, limit int) (n int64, first []splitFinding, err error) {
	q := `SELECT event_id, consumer, count(*), group_concat(id, ',') FROM "` + r.effect + `" GROUP BY event_id, consumer HAVING count(*) > 1 ORDER BY min(id)`
	err = r.each(ctx, r.conn, q, func(c [4]string) {
		n++
		if len(first) < limit {
			ids, _ := parseIDs(c[3])
			first = append(first, splitFinding{first: ids[0], ids: ids,
				facts: invariant.Facts{Event: c[0], Consumer: c[1], Table: r.effect, Rows: count(c[2])}})
		}
	})
	if err != nil {
		return 0, nil, fmt.Errorf("check %s: %w", invariant.DuplicateEffect, err)
	}
	return n, first, nil
}

func parseIDs(s string) ([]int64, error) {
	parts := strings.Split(s, ",")
	ids := make([]int64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return nil, err
		}
		ids[i] = n
	}
	slices.Sort(ids)
	return ids, nil
}

// eachKey calls f for every business key the effects of the parts carry,
// in key order, with its effects' ids (ascending) and their events.
func (s *SplitDB) eachKey(ctx context.Context, f func(key string, ids []int64, events []string)) error {
	var cs []*keyCursor
	for _, r := range s.parts {
		rows, err := r.conn.QueryContext(ctx, `SELECT business_key, id, event_id FROM "`+r.effect+`" WHERE business_key IS NOT NULL ORDER BY business_key, id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		c := &keyCursor{rows: rows}
		c.next()
		cs = append(cs, c)
	}
	type eff struct {
		id    int64
		event string
	}
	var group []eff
	for {
		key, found := lowestKey(cs)
		if !found {
			break
		}
		group = group[:0]
		for _, c := range cs {
			for c.ok && c.key == key {
				group = append(group, eff{c.id, c.event})
				c.next()
			}
		}
		slices.SortFunc(group, func(a, b eff) int { return cmp.Compare(a.id, b.id) })
		ids := make([]int64, len(group))
		events := make([]string, len(group))
		for i, e := range group {
			ids[i], events[i] = e.id, e.event
		}
		f(key, ids, events)
	}
	for _, c := range cs {
		if c.err == nil {
			c.err = c.rows.Err()
		}
		if c.err != nil {
			return c.err
		}
	}
	return ctx.Err()
}

// keyCursor walks one part's effects in business key order: ok while it
// stands on one (its key, id and event).
type keyCursor struct {
	rows  *sql.Rows
	key   string
	id    int64
	event string
	ok    bool
	err   error
}

// next moves the cursor to the part's next effect; past the last one, or
// on an error, ok turns false.
func (c *keyCursor) next() {
	if c.ok = c.err == nil && c.rows.Next(); c.ok {
		if c.err = c.rows.Scan(&c.key, &c.id, &c.event); c.err != nil {
			c.ok = false
		}
	}
}

// lowestKey is the first business key any of the cursors stands on;
// found is false when all are past their last effect.
func lowestKey(cs []*keyCursor) (key string, found bool) {
	for _, c := range cs {
		if c.ok && (!found || c.key < key) {
			key, found = c.key, true
		}
	}
	return key, found
}

// ranks counts each id back to the one a single store would have given
// its effect: one more than the effects of every part numbered before it.
func (s *SplitDB) ranks(ctx context.Context, ids []int64) (map[int64]int64, error) {
	out := map[int64]int64{}
	if len(ids) == 0 {
		return out, nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	before := make([]int64, len(ids)) // effects numbered before ids[i]
	for _, r := range s.parts {
		rows, err := r.conn.QueryContext(ctx, `SELECT id FROM "`+r.effect+`" WHERE id < ? ORDER BY id`, ids[len(ids)-1])
		if err != nil {
			return nil, err
		}
		j, n := 0, int64(0)
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			for j < len(ids) && ids[j] <= id {
				before[j] += n
				j++
			}
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
		for ; j < len(ids); j++ {
			before[j] += n
		}
	}
	for i, id := range ids {
		out[id] = before[i] + 1
	}
	return out, nil
}
