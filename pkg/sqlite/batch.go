package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/redeliver/redeliver/pkg/handler"
)

// The replay store: the same tables as Create's, written through a fast
// path. Deliveries are grouped into one transaction per batch (group
// commit); a failed delivery is undone alone (its inserted rows deleted,
// or rolled back to its SAVEPOINT when it purged markers), and the batch
// commits only between deliveries, so a committed batch holds only whole
// deliveries. The
// statements are prepared once on the SQLite connection under the driver's
// and run through the C API (raw.go: no database/sql, nor the driver, per
// call), and inserts read the last insert id instead of RETURNING.
//
// A crash loses at most the deliveries of the open batch; none of them was
// acknowledged to anything outside the database, so a resumed replay
// delivers them again and they are processed as new — nothing doubled.

// ReplayDB is a database a capture is replayed into. On a file it keeps
// what an earlier replay wrote, so a replay can be resumed.
type ReplayDB struct {
	db     *sql.DB
	anchor *sql.Conn
	lock   *fileLock
	conn   *sql.Conn
	path   string
	effect string
	// private: the database is SQLite's temporary one, which only conn sees.
	private bool
	// markerKey: the markers are keyed by (event_id, consumer).
	markerKey bool
	log       *CaptureLog // the capture log the batch writes to
	parts     int         // the replay's stores this one is a part of (SplitDB)
	// Resumed is set when the file already held a replay's tables.
	Resumed bool
}

// OpenReplay opens path (":memory:" or a file) for a replay with cfg. A file
// an earlier replay made with the same strategy and effect table is kept
// and resumed; a file redeliver did not make is refused.
func OpenReplay(ctx context.Context, path string, cfg handler.Config) (*ReplayDB, error) {
	return openReplay(ctx, path, cfg, 1)
}

// openReplay opens one of parts stores of a replay; a store that keeps
// nothing takes its share of the page cache.
func openReplay(ctx context.Context, path string, cfg handler.Config, parts int) (*ReplayDB, error) {
	if !ValidTableName(cfg.Effect) {
		return nil, fmt.Errorf("effect table name %q is not a plain SQL identifier", cfg.Effect)
	}
	resume := false
	var lock *fileLock
	if path != Memory {
		var err error
		if lock, resume, err = claimReplay(ctx, path, cfg); err != nil {
			return nil, err
		}
	}
	var d *DB
	var err error
	if path == Memory {
		d, err = openPrivate(replayCacheKiB / parts)
	} else {
		d, err = open(path)
	}
	if err != nil {
		lock.release()
		return nil, err
	}
	d.lock = lock
	d.effect = cfg.Effect
	r := &ReplayDB{db: d.db, anchor: d.anchor, lock: lock, path: path, effect: cfg.Effect, private: d.private,
		markerKey: cfg.Strategy != handler.CheckThenAct, parts: parts}
	if resume {
		r.Resumed = true
	} else if err := d.createSchema(ctx, cfg); err != nil {
		d.Close()
		return nil, err
	}
	if d.private {
		r.conn = d.anchor
		return r, nil
	}
	if r.conn, err = r.db.Conn(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if _, err := r.conn.ExecContext(ctx, `PRAGMA cache_size = -`+strconv.Itoa(replayCacheKiB)); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// claimReplay locks path and says whether it holds a replay to resume. A
// file that is not empty must be a replay database redeliver made for the
// same handler; it is read without being written until then.
func claimReplay(ctx context.Context, path string, cfg handler.Config) (lock *fileLock, resume bool, err error) {
	if lock, err = lockFile(path); err != nil {
		return nil, false, err
	}
	defer func() {
		if err != nil {
			lock.release()
			lock = nil
		}
	}()
	size, err := lock.size()
	if err != nil || size == 0 {
		return lock, false, removeSidecars(path)
	}
	meta, ours, err := readMeta(ctx, path)
	if err != nil {
		return nil, false, err
	}
	if !ours {
		return nil, false, fmt.Errorf("%s exists and is %w; choose another --db path", quote(path), ErrNotOurs)
	}
	if meta["strategy"] != string(cfg.Strategy) || meta["effect"] != cfg.Effect {
		return nil, false, fmt.Errorf("%s holds a replay with strategy %s and effect table %s, not %s and %s; %w (use another --db path to start afresh)",
			quote(path), meta["strategy"], meta["effect"], cfg.Strategy, cfg.Effect, ErrMismatch)
	}
	return lock, true, nil
}

// ErrMismatch is returned when a database to resume was made for another handler.
var ErrMismatch = errors.New("it cannot be resumed with this handler")

// Path returns where the database lives.
func (r *ReplayDB) Path() string { return r.path }

// SideBySide reports whether the invariants can be checked while the
// capture findings are counted: they can, the capture log has a connection
// of its own.
func (r *ReplayDB) SideBySide() bool { return true }

// Close closes the database.
func (r *ReplayDB) Close() error {
	if r.log != nil {
		r.log.Close()
	}
	if r.conn != nil {
		r.conn.Close()
	}
	r.anchor.Close()
	err := r.db.Close()
	r.lock.release()
	return err
}

// When a batch commits. On a file a batch costs the pages it dirties, each
// written to the WAL once per commit however often the batch touched it,
// and a commit that grows the WAL past its limit costs a checkpoint with
// its fsyncs. With random ids every delivery dirties a leaf of each keyed
// index, so a batch of a thousand dirties thousands of pages and the next
// batch dirties them again. Once a batch's dirty pages fill the page cache
// SQLite spills them to the WAL mid-transaction, so the cache, not the
// batch, sets how many pages a delivery writes; what the batch still
// decides is how many commits and checkpoints there are. Fewer is better,
// up to what a kill -9 may make a resumed replay redo: so a file's batch
// commits by the clock, every maxBatchAge. The private database of a
// replay that keeps nothing never commits before the end: it starts empty,
// and SQLite journals no page created inside the open transaction, so one
// transaction journals almost nothing, while every commit would make the
// next batch journal again each older page it touches.
const maxBatchAge = time.Second

// replayCacheKiB is the page cache of a replay's database while it takes
// deliveries: the leaves of the keyed indexes random ids land in, and the
// pages every delivery passes through. A leaf that is not in it is read
// back from the file, after a dirty one was written out to make room: two
// system calls. 32 MiB keeps most of the keyed leaves of 300,000 random ids.
// It is most of a replay's memory, about twice over (each 4 KiB page takes
// an 8 KiB slot of the allocator), and it does not grow with the capture.
// Once the deliveries are done the cache shrinks to checkCacheKiB, so that
// the sorts of the findings do not add their memory to it. (A variable
// only so that a test can outgrow it cheaply.)
var replayCacheKiB = 32 << 10

// Run calls f with the group-commit store on the database's connection,
// then commits what f left open. batch is how many deliveries share one
// commit; 0 lets the store choose (above).
func (r *ReplayDB) Run(ctx context.Context, batch int, f func(b *Batch) error) error {
	if batch < 0 {
		batch = 1
	}
	err := r.conn.Raw(func(dc any) error {
		b, err := newBatch(dc, r.effect, batch, r.private, r.markerKey)
		if err != nil {
			return err
		}
		b.log = r.log
		if !r.Resumed && !bloomOff {
			b.seen = newSeenPart(r.parts)
		}
		defer b.close()
		ferr := f(b)
		var se *handler.StoreError
		if errors.As(ferr, &se) || b.broken != nil {
			b.abort()
			if ferr == nil {
				ferr = b.broken
			}
			return ferr
		}
		// Every finished delivery is whole or undone: committing them
		// is safe even when f was interrupted.
		if err := b.Flush(); err != nil {
			return err
		}
		return ferr
	})
	if err == nil {
		// What is left, the capture findings and the invariants, scans
		// the tables in order and sorts: a small cache does, and the
		// replay's cache is handed back before the sorts take theirs.
		_, err = r.conn.ExecContext(ctx, `PRAGMA cache_size = -`+strconv.Itoa(checkCacheKiB))
	}
	return err
}

// checkCacheKiB is the page cache once the deliveries are done.
const checkCacheKiB = 2 << 10

// Batch is the group-commit store. It implements handler.Store; one
// delivery's transaction is open at a time.
type Batch struct {
	conn    driver.Conn
	raw     *rawConn // the SQLite connection under conn (see raw.go), or nil
	size    int      // deliveries per commit; 0: by the cache and the clock
	private bool     // the database is the replay's alone: one transaction
	log     *CaptureLog
	seen    *seen     // the markers written, when the replay wrote them all
	opened  time.Time // when the open batch began
	count   int       // deliveries in the open batch
	open    bool      // the batch transaction has begun
	tx      batchTx
	args    []driver.NamedValue
	times   struct {
		t time.Time
		s string
	}

	// A failed delivery is undone by deleting the rows it inserted instead
	// of rolling back to a savepoint (see undoable).
	undo      []undoStep
	markerKey bool  // markers are deleted by key, not by rowid
	broken    error // an undo failed: the batch takes no more deliveries
	// order, when set, is the id the next effect takes (SetOrder).
	order int64
	// statements counts the statements run, for the tests.
	statements int

	// lit is the handler's statements with the values that stay the
	// same written in (see literals).
	lit literals

	begin, commit, rollback, savepoint, release, rollbackTo   *prepared
	marker, insertMarker, insertEffect, effectOf, effectByKey *prepared
	purge, unmark, uneffect, insertEffectAt                   *prepared
}

type prepared struct {
	raw   *rawStmt // through the C API (see raw.go), or else the driver's:
	st    driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
}

// No context reaches the driver: a cancellable one costs a watcher per
// statement. The replay checks for cancellation between deliveries.
var bg = context.Background()

func newBatch(dc any, effect string, size int, private, markerKey bool) (*Batch, error) {
	conn, ok := dc.(driver.Conn)
	if !ok {
		return nil, errors.New("sqlite driver connection expected")
	}
	b := &Batch{conn: conn, raw: rawOf(conn), size: size, private: private, markerKey: markerKey, args: make([]driver.NamedValue, 8)}
	for i := range b.args {
		b.args[i].Ordinal = i + 1
	}
	b.tx.b = b
	q := makeQueries(effect)
	// A marker is deleted by its key, or, where markers have none
	// (check-then-act), by its rowid.
	unmark := `DELETE FROM processed WHERE rowid = ?`
	if markerKey {
		unmark = `DELETE FROM processed WHERE event_id = ? AND consumer = ?`
	}
	b.lit.effect = effect
	for _, s := range []struct {
		p   **prepared
		sql string
	}{
		{&b.unmark, unmark},
		{&b.uneffect, `DELETE FROM "` + effect + `" WHERE id = ?`},
		{&b.begin, `BEGIN IMMEDIATE`},
		{&b.commit, `COMMIT`},
		{&b.rollback, `ROLLBACK`},
		{&b.savepoint, `SAVEPOINT delivery`},
		{&b.release, `RELEASE delivery`},
		{&b.rollbackTo, `ROLLBACK TO delivery`},
		{&b.marker, `SELECT p.identity, COALESCE(p.business_key, '') FROM processed p WHERE p.event_id = ? AND p.consumer = ? LIMIT 1`},
		{&b.insertMarker, q.insertMarker},
		{&b.insertEffect, q.insertEffect},
		{&b.insertEffectAt, q.insertEffectAt},
		{&b.effectOf, q.effectOf},
		{&b.effectByKey, q.effectByKey},
		{&b.purge, q.purge},
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

// prepare prepares q on raw, or when it is nil, on the driver's conn.
func prepare(conn driver.Conn, raw *rawConn, q string) (*prepared, error) {
	if raw != nil {
		st, err := raw.prepare(q)
		if err != nil {
			return nil, err
		}
		return &prepared{raw: st}, nil
	}
	var st driver.Stmt
	var err error
	if pc, ok := conn.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(bg, q)
	} else {
		st, err = conn.Prepare(q)
	}
	if err != nil {
		return nil, err
	}
	p := &prepared{st: st}
	p.exec, _ = st.(driver.StmtExecContext)
	p.query, _ = st.(driver.StmtQueryContext)
	if p.exec == nil || p.query == nil {
		st.Close()
		return nil, errors.New("the driver's statements lack ExecContext/QueryContext")
	}
	return p, nil
}

func (b *Batch) close() {
	b.seen.close()
	b.seen = nil
	b.lit.close()
	closeAll(b.begin, b.commit, b.rollback, b.savepoint, b.release, b.rollbackTo,
		b.marker, b.insertMarker, b.insertEffect, b.effectOf, b.effectByKey, b.purge, b.unmark, b.uneffect, b.insertEffectAt)
	b.raw.close()
	b.raw = nil
}

func (b *Batch) exec(p *prepared, args ...any) (driver.Result, error) {
	b.statements++
	return p.run(b.args, args)
}

// run executes the statement with args, bound into the reusable nv.
func (p *prepared) run(nv []driver.NamedValue, args []any) (driver.Result, error) {
	if p.raw != nil {
		return p.raw.exec(args)
	}
	nv = nv[:len(args)]
	for i, a := range args {
		nv[i].Value = a
	}
	return p.exec.ExecContext(bg, nv)
}

// closeAll closes the statements that were prepared.
func closeAll(ps ...*prepared) {
	for _, p := range ps {
		switch {
		case p == nil:
		case p.raw != nil:
			p.raw.close()
		default:
			p.st.Close()
		}
	}
}

// row runs a query and reads its first row into dest; found is false when
// there is none.
func (b *Batch) row(p *prepared, dest []driver.Value, args ...any) (bool, error) {
	b.statements++
	if p.raw != nil {
		return p.raw.row(dest, args)
	}
	nv := b.args[:len(args)]
	for i, a := range args {
		nv[i].Value = a
	}
	rows, err := p.query.QueryContext(bg, nv)
	if err != nil {
		return false, err
	}
	err = rows.Next(dest)
	cerr := rows.Close()
	if err == io.EOF {
		return false, cerr
	}
	if err != nil {
		return false, err
	}
	return true, cerr
}

func (b *Batch) stamp(t time.Time) string {
	if !t.Equal(b.times.t) || b.times.s == "" {
		b.times.t, b.times.s = t, formatTime(t)
	}
	return b.times.s
}

// Begin starts a delivery, beginning the batch transaction first when none
// is open. Its savepoint is opened by its first write: a duplicate, which
// only reads, needs none.
func (b *Batch) Begin(ctx context.Context) (handler.Tx, error) {
	if b.tx.active {
		return nil, errors.New("a delivery's transaction is already open")
	}
	if b.broken != nil {
		return nil, b.broken
	}
	if err := b.openBatch(); err != nil {
		return nil, err
	}
	b.tx.active, b.tx.saved = true, false
	b.undo = b.undo[:0]
	return &b.tx, nil
}

// openBatch begins the batch transaction when none is open.
func (b *Batch) openBatch() error {
	if b.open {
		return nil
	}
	if _, err := b.exec(b.begin); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	b.open = true
	if b.size == 0 && !b.private {
		b.opened = time.Now()
	}
	return nil
}

// full reports whether the open batch should commit now (see maxBatchAge).
func (b *Batch) full() bool {
	switch {
	case b.size > 0:
		return b.count >= b.size
	case b.private:
		return false
	case b.count%64 != 0: // the clock and the counters, now and then
		return false
	}
	return time.Since(b.opened) >= maxBatchAge
}

// undoStep is a row a delivery inserted: its marker (by key, or by rowid)
// or its effect (by id).
type undoStep struct {
	marker            bool
	id                int64
	eventID, consumer string
}

// write prepares the delivery's first write (see undoable).
func (t *batchTx) write() error {
	return t.savepoint(false)
}

// undoable reports whether the delivery's inserts are undone by deleting
// their rows instead of by rolling back to a savepoint: unless the delivery
// has a savepoint already. A savepoint costs a copy of every page the
// delivery changes, taken at the first change, in its journal (on a file, a
// temporary file: a write system call each): with random ids, a leaf of
// each keyed index per delivery, and most deliveries never roll back.
// Deleting the rows a failed delivery inserted leaves the rows rolling it
// back leaves, and the next effect gets the same id (the largest left plus
// one). The deletes run inside the batch transaction, which commits only
// between deliveries, so a crash still loses whole deliveries only. A
// delivery that deletes (PurgeMarkers) takes a savepoint.
func (t *batchTx) undoable() bool { return !t.saved }

func (t *batchTx) savepoint(always bool) error {
	if t.saved || !always && t.undoable() {
		return nil
	}
	if _, err := t.b.exec(t.b.savepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	t.saved = true
	return nil
}

// Flush commits the open batch.
func (b *Batch) Flush() error {
	if b.broken != nil {
		return b.broken
	}
	if !b.open {
		return nil
	}
	if _, err := b.exec(b.commit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	b.open, b.count = false, 0
	return nil
}

func (b *Batch) abort() {
	if b.open {
		b.exec(b.rollback)
		b.open, b.count = false, 0
	}
}

// SetOrder makes at the id of the effect the next delivery writes, if it
// writes one: a store that holds a part of a replay numbers its effects in
// the order of the whole replay (see SplitDB). 0 numbers them as SQLite
// does.
func (b *Batch) SetOrder(at int64) { b.order = at }

// batchTx is one delivery inside the batch.
type batchTx struct {
	b      *Batch
	active bool
	saved  bool // the savepoint is open
	row    [2]driver.Value
}

func (t *batchTx) Marker(_ context.Context, eventID, consumer string) (handler.Marker, bool, error) {
	m := handler.Marker{EventID: eventID, Consumer: consumer}
	if t.b.seen != nil && !t.b.seen.has(eventID, consumer) {
		return m, false, nil
	}
	var found bool
	p, err := t.b.lit.lookup(t.b, consumer)
	if err == nil && p != nil {
		found, err = t.b.row(p, t.row[:2], eventID)
	} else if err == nil {
		found, err = t.b.row(t.b.marker, t.row[:2], eventID, consumer)
	}
	if err != nil || !found {
		return m, false, wrap("look up marker", err)
	}
	m.Identity = text(t.row[0])
	m.BusinessKey = text(t.row[1])
	return m, true, nil
}

func (t *batchTx) InsertMarker(_ context.Context, m handler.Marker) error {
	if err := t.write(); err != nil {
		return err
	}
	if t.b.seen != nil {
		t.b.seen.add(m.EventID, m.Consumer)
	}
	var r driver.Result
	var err error
	if stamp := t.b.stamp(m.At); t.b.lit.use(m.Consumer, stamp) {
		var p *prepared
		k := keyed(m.BusinessKey)
		if p, err = t.b.lit.markerInsert(t.b, k); err != nil {
			return wrap("insert marker", err)
		}
		if k == 0 {
			r, err = t.b.exec(p, m.EventID, m.Identity)
		} else {
			r, err = t.b.exec(p, m.EventID, m.Identity, m.BusinessKey)
		}
	} else {
		r, err = t.b.exec(t.b.insertMarker, m.EventID, m.Consumer, m.Identity, noKey(m.BusinessKey), stamp)
	}
	if err != nil {
		return wrap("insert marker", err)
	}
	if t.undoable() {
		u := undoStep{marker: true, eventID: m.EventID, consumer: m.Consumer}
		if u.id, err = r.LastInsertId(); err != nil {
			return wrap("insert marker", err)
		}
		t.b.undo = append(t.b.undo, u)
	}
	return nil
}

func (t *batchTx) InsertEffect(_ context.Context, e handler.Effect) (int64, error) {
	if err := t.write(); err != nil {
		return 0, err
	}
	var r driver.Result
	var err error
	at, stamp := t.b.order, t.b.stamp(e.At)
	switch {
	case t.b.lit.use(e.Consumer, stamp):
		var p *prepared
		k := keyed(e.BusinessKey)
		if p, err = t.b.lit.effectInsert(t.b, k, at > 0); err != nil {
			return 0, wrap("insert effect", err)
		}
		switch {
		case at > 0 && k == 0:
			r, err = t.b.exec(p, at, e.EventID, e.Payload)
		case at > 0:
			r, err = t.b.exec(p, at, e.EventID, e.BusinessKey, e.Payload)
		case k == 0:
			r, err = t.b.exec(p, e.EventID, e.Payload)
		default:
			r, err = t.b.exec(p, e.EventID, e.BusinessKey, e.Payload)
		}
	case at > 0:
		r, err = t.b.exec(t.b.insertEffectAt, at, e.EventID, e.Consumer, noKey(e.BusinessKey), e.Payload, stamp)
	default:
		r, err = t.b.exec(t.b.insertEffect, e.EventID, e.Consumer, noKey(e.BusinessKey), e.Payload, stamp)
	}
	if err != nil {
		return 0, wrap("insert effect", err)
	}
	id, err := r.LastInsertId()
	if err == nil && t.undoable() {
		t.b.undo = append(t.b.undo, undoStep{id: id})
	}
	return id, err
}

func (t *batchTx) EffectOf(_ context.Context, eventID, consumer string) (int64, bool, error) {
	found, err := t.b.row(t.b.effectOf, t.row[:1], eventID, consumer)
	if err != nil || !found {
		return 0, false, wrap("look up effect", err)
	}
	id, _ := t.row[0].(int64)
	return id, true, nil
}

func (t *batchTx) EffectByKey(_ context.Context, key string) (int64, string, bool, error) {
	found, err := t.b.row(t.b.effectByKey, t.row[:2], key)
	if err != nil || !found {
		return 0, "", false, wrap("look up effect by key", err)
	}
	id, _ := t.row[0].(int64)
	return id, text(t.row[1]), true, nil
}

func (t *batchTx) PurgeMarkers(_ context.Context, before time.Time) error {
	if len(t.b.undo) > 0 {
		return errors.New("purge markers: the delivery has written already")
	}
	if err := t.savepoint(true); err != nil {
		return err
	}
	_, err := t.b.exec(t.b.purge, formatTime(before))
	return wrap("purge markers", err)
}

// Commit keeps the delivery (releasing its savepoint if it took one); every
// batch-size deliveries it commits the batch.
func (t *batchTx) Commit() error {
	if !t.active {
		return nil
	}
	t.active = false
	t.b.undo = t.b.undo[:0]
	if t.saved {
		if _, err := t.b.exec(t.b.release); err != nil {
			return wrap("release", err)
		}
	}
	t.b.count++
	if t.b.full() {
		return t.b.Flush()
	}
	return nil
}

// Rollback undoes the delivery, and only it.
func (t *batchTx) Rollback() error {
	if !t.active {
		return nil
	}
	t.active = false
	if !t.saved {
		return t.b.undoAll()
	}
	if _, err := t.b.exec(t.b.rollbackTo); err != nil {
		return wrap("rollback to savepoint", err)
	}
	_, err := t.b.exec(t.b.release)
	return wrap("release", err)
}

// undoAll deletes what the delivery inserted, last first. A batch whose
// undo failed holds part of a delivery: it refuses the next one, and the
// replay stops with the error.
func (b *Batch) undoAll() error {
	for i := len(b.undo) - 1; i >= 0 && b.broken == nil; i-- {
		u := b.undo[i]
		var err error
		switch {
		case !u.marker:
			_, err = b.exec(b.uneffect, u.id)
		case b.markerKey:
			_, err = b.exec(b.unmark, u.eventID, u.consumer)
		default:
			_, err = b.exec(b.unmark, u.id)
		}
		if err != nil {
			b.broken = fmt.Errorf("undo a failed delivery: %w", err)
		}
	}
	b.undo = b.undo[:0]
	return b.broken
}

// noKey binds an empty business key as NULL, which is what the inserts
// store for it (NULLIF): the driver copies a text parameter into C
// memory (a malloc and a free under the allocator's lock, shared by the
// parts of a split replay), a NULL costs nothing.
func noKey(k string) any {
	if k == "" {
		return nil
	}
	return k
}

func text(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}
