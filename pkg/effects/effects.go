// Package effects reads the business effects a consumer under test wrote
// into its own database — PostgreSQL, MySQL/MariaDB or a SQLite file — so
// that they can be judged. It runs only the reset statements the scenario
// names and otherwise only reads: it never creates, alters or drops a
// table of the user's.
//
// Each kind of database is a dialect (dialect.go): PostgreSQL
// (postgres.go), MySQL and MariaDB (mysql.go) and a SQLite file
// (sqlite.go), each listed once in dialects; the rest of the package asks
// the dialect, never the kind. It also owns where a connection string
// leads and whether it may be reset (place.go). Of this module it
// imports pkg/escape, pkg/problem, pkg/rawio, pkg/redact and
// pkg/scenario; it links the PostgreSQL, MySQL and SQLite drivers, and no
// broker client or store of the built-in handler.
package effects

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// Error is a failure of the effects database: unreachable, a missing
// table or column, a reset statement that failed. Its message is one
// sentence naming what and where.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errorf(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Row is one business effect: its key, the event that made it (when the
// effects name an event column), and every column's value, to tell
// whether a row changed.
type Row struct {
	Key    string
	Event  string
	Values string // a JSON array of the compared columns' values
	// Columns names the values, in order: every column the table or query
	// returns, except those the effects' ignore_columns name. Rows read
	// together share it.
	Columns []string
}

// DB is the consumer's database, opened for judging, through the
// session its dialect opened.
type DB struct {
	s     session
	dl    dialect
	where string // the database in words, without its user or password
	spec  *scenario.Effects
	// lockWait is how long a reset or a read may wait on a lock before
	// the holder is named (locks.go).
	lockWait time.Duration
	// The database was there when a key's rows were read (a SQLite file
	// may not be yet); the next reads of a key's rows do not look for it
	// again (a replay reads them at every redelivery).
	found atomic.Bool
}

// Where names the database in words, without its user or password:
// "PostgreSQL 127.0.0.1:5432/test", "SQLite file effects.db".
func (d *DB) Where() string { return d.where }

// Kind is postgres, mysql or sqlite.
func (d *DB) Kind() string { return d.dl.kind() }

// Describe names the database for a report: its kind and where it is
// (hosts, port and database; never the user or password).
func Describe(dsn string) string {
	p, err := Parse(dsn)
	if err != nil {
		return KindName(KindOf(dsn)) + " (" + err.Error() + ")"
	}
	return whereOf(p)
}

// whereOf names a place, a SQLite file's path redacted as any configuration
// string shown.
func whereOf(p *Place) string {
	if p.File {
		return KindName(p.Kind) + " file " + redact.String(p.Name)
	}
	return p.String()
}

// CheckReset holds the reset statements to a database the user plainly
// meant: on this machine (a SQLite file, a unix socket, a loopback
// address, localhost), on a one-label service host such as postgres or
// db, or on a host allow_reset names. The db is resolved as its driver
// resolves it, environment included; nothing is dialled. The refusal
// names reset's place and the host, never the user or password.
func CheckReset(e *scenario.Effects) *problem.Error {
	if e == nil || len(e.Reset) == 0 {
		return nil
	}
	p, err := Parse(e.DB)
	if err != nil {
		return problem.Invalid(e.DBPos, "db is %v", err)
	}
	host := p.Foreign(e.AllowReset)
	if host == "" {
		return nil
	}
	return problem.Invalid(e.ResetPos, "reset would empty the %s database at %s, and %s is neither this machine nor a one-label service host such as postgres; if that database is meant to be emptied, add allow_reset: [%s] to effects", KindName(p.Kind), p.Address(), host, host)
}

// Open connects to the effects database and checks that it answers. A
// SQLite file that does not exist yet is not an error: a consumer run as
// a process per delivery may create it on its first delivery.
func Open(ctx context.Context, spec *scenario.Effects) (*DB, error) {
	dl := dialectFor(spec.DB)
	place, err := dl.place(spec.DB)
	if err != nil {
		return nil, errorf("the effects db is %v", err)
	}
	where := whereOf(place)
	s, err := dl.open(spec.DB, place, spec)
	if le := (*Error)(nil); errors.As(err, &le) {
		return nil, err
	}
	if err != nil {
		return nil, errorf("cannot open the effects database %s: %v", where, err)
	}
	d := &DB{s: s, dl: dl, where: where, spec: spec, lockWait: LockWait}
	if !place.File {
		if err := s.conn().PingContext(ctx); err != nil {
			s.close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errorf("cannot reach the effects database %s: %v", where, oneLine(err))
		}
	}
	return d, nil
}

// Close closes the connection.
func (d *DB) Close() error { return d.s.close() }

// exists reports whether the database is there yet.
func (d *DB) exists() bool { return d.s.exists() }

// Reset runs the scenario's reset statements, in order. On a SQLite file
// that does not exist yet there is nothing to reset.
func (d *DB) Reset(ctx context.Context) error {
	if err := CheckReset(d.spec); err != nil {
		return err
	}
	if !d.exists() {
		return nil
	}
	for _, stmt := range d.spec.Reset {
		err := d.watchLocks(ctx, fmt.Sprintf("the reset statement %q", stmt), func(ctx context.Context) error {
			_, err := d.s.conn().ExecContext(ctx, stmt)
			return err
		})
		if le := (*LockError)(nil); errors.As(err, &le) {
			return err
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return errorf("the reset statement %q failed on the effects database %s: %v", stmt, d.where, oneLine(err))
		}
	}
	return nil
}

// CheckIgnored reads the columns of the effect table (or query), without
// its rows, and says which column ignore_columns names that is not among
// them, before anything is delivered. A database or table that does not
// exist yet (a consumer may create it on its first delivery) is left to
// the first reading of the rows.
func (d *DB) CheckIgnored(ctx context.Context) error {
	if len(d.spec.IgnoreColumns) == 0 || !d.exists() {
		return nil
	}
	q, what := "SELECT * FROM "+d.quote(d.spec.Table)+" WHERE 1 = 0", "the effects table "+d.spec.Table
	if d.spec.Query != "" {
		q, what = "SELECT * FROM ("+d.spec.Query+") AS redeliver_effects WHERE 1 = 0", "the effects query"
	}
	var rows *sql.Rows
	var err error
	if d.spec.Query != "" {
		// The user's query, read-only as every time it runs.
		var done func()
		rows, done, err = d.readOnly(ctx, q)
		if done != nil {
			defer done()
		}
	} else {
		rows, err = d.s.conn().QueryContext(ctx, q)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil
	}
	_, err = d.compared(cols, what)
	return err
}

// readOnly runs the user's query where the database refuses a write: a
// READ ONLY transaction on PostgreSQL and MySQL, rolled back by done,
// and PRAGMA query_only on SQLite.
func (d *DB) readOnly(ctx context.Context, q string, args ...any) (*sql.Rows, func(), error) {
	return d.s.readOnly(ctx, q, args...)
}

// keyQuery is the effects query q filtered to the rows of one key, its
// one argument: q as a subquery (without a closing semicolon).
func (d *DB) keyQuery(q string) string {
	return d.s.keyQuery(strings.TrimRight(strings.TrimSpace(q), "; \t\r\n"))
}

// readError says why a read failed; a write the database refused is
// named as such.
func (d *DB) readError(what string, err error) error {
	if wrote(err) {
		return errorf("%s must only read, and %s refused it as a write: %v", what, d.where, oneLine(err))
	}
	return errorf("cannot read %s in %s: %v", what, d.where, oneLine(err))
}

// quote quotes a (possibly schema-qualified) name for the database.
func (d *DB) quote(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = d.s.quote(p)
	}
	return strings.Join(parts, ".")
}

// Rows returns every effect row, or with key set, the rows of that key,
// sorted by their values.
func (d *DB) Rows(ctx context.Context, key *string) ([]Row, error) {
	var out []Row
	err := d.EachRow(ctx, key, func(r Row) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Values < out[j].Values })
	return out, nil
}

// EachRow calls f with every effect row, or with key set, every row of
// that key, in the order the database returns them, holding none.
func (d *DB) EachRow(ctx context.Context, key *string, f func(Row) error) error {
	what := "the effect rows"
	if key != nil {
		what = "the effect rows of key " + *key
	}
	return d.watchLocks(ctx, "reading "+what, func(ctx context.Context) error { return d.eachRow(ctx, key, f) })
}

func (d *DB) eachRow(ctx context.Context, key *string, f func(Row) error) error {
	if key == nil || !d.found.Load() {
		if !d.exists() {
			return errorf("the effects database %s does not exist", d.where)
		}
		if key != nil {
			d.found.Store(true)
		}
	}
	src := d.rowSource()
	rows, done, err := d.openRows(ctx, key, src)
	if done != nil {
		defer done()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return d.readError(src.what, err)
	}
	defer rows.Close()
	return d.scanRows(ctx, rows, src, key, f)
}

// rowSource is where the effect rows are read from, as a message says it
// ("the effects table payments"), and the names of their key and event
// columns.
type rowSource struct {
	what, keyCol, eventCol string
}

func (d *DB) rowSource() rowSource {
	if d.spec.Query == "" {
		return rowSource{what: "the effects table " + d.spec.Table, keyCol: d.spec.Key, eventCol: d.spec.Event}
	}
	what := "the effects query"
	if at := d.spec.QueryPos.String(); at != "" {
		what = "the effects query (" + at + ")"
	}
	return rowSource{what: what, keyCol: "key", eventCol: "event"}
}

// openRows runs the read of the effect rows, or with key set, of that
// key's: the table's, or the effects query's (done, when not nil, ends
// its read-only transaction).
func (d *DB) openRows(ctx context.Context, key *string, src rowSource) (rows *sql.Rows, done func(), err error) {
	if d.spec.Query == "" {
		q := "SELECT * FROM " + d.quote(d.spec.Table)
		var args []any
		if key != nil {
			q += d.s.keyWhere(src.keyCol)
			args = append(args, *key)
		}
		rows, err = d.s.query(ctx, q, args...)
		return rows, nil, err
	}
	q := d.spec.Query
	if key == nil {
		return d.readOnly(ctx, q)
	}
	// Only the key's rows: the query is filtered as a subquery, so a
	// redelivery reads its key, not the whole table. A query that cannot
	// be a subquery is read whole and filtered here.
	rows, done, err = d.readOnly(ctx, d.keyQuery(q), *key)
	if err != nil && ctx.Err() == nil && !wrote(err) {
		if done != nil {
			done()
		}
		rows, done, err = d.readOnly(ctx, q)
	}
	return rows, done, err
}

// scanRows calls f with each row of rows (with key set, each of that
// key), its columns checked first: the key's, the event's, and those
// ignore_columns names.
func (d *DB) scanRows(ctx context.Context, rows *sql.Rows, src rowSource, key *string, f func(Row) error) error {
	what := src.what
	cols, err := rows.Columns()
	if err != nil {
		return errorf("cannot read %s in %s: %v", what, d.where, oneLine(err))
	}
	l, err := d.layout(cols, src)
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return errorf("cannot read %s in %s: %v", what, d.where, oneLine(err))
		}
		r := l.row(vals)
		if key == nil || r.Key == *key {
			if err := f(r); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return d.readError(what, err)
	}
	return nil
}

// rowLayout is where a row's parts are among the columns read: the
// key's and the event's (-1 when none), and the compared ones, by index
// and by name.
type rowLayout struct {
	key, event int
	keep       []int
	compared   []string
}

// layout checks the columns read, cols, for the key's, the event's and
// those ignore_columns names, and returns where each part of a row is.
func (d *DB) layout(cols []string, src rowSource) (rowLayout, error) {
	ki, ei := -1, -1
	for i, c := range cols {
		if strings.EqualFold(c, src.keyCol) {
			ki = i
		}
		if src.eventCol != "" && strings.EqualFold(c, src.eventCol) {
			ei = i
		}
	}
	if ki < 0 {
		if d.spec.Query != "" {
			return rowLayout{}, errorf("the effects query returns no column named key (it returns %s); write SELECT your_key_column AS key …", strings.Join(cols, ", "))
		}
		return rowLayout{}, errorf("the effects table %s in %s has no column %s (it has %s)", d.spec.Table, d.where, src.keyCol, strings.Join(cols, ", "))
	}
	if src.eventCol != "" && ei < 0 && d.spec.Query == "" {
		return rowLayout{}, errorf("the effects table %s in %s has no column %s (it has %s)", d.spec.Table, d.where, src.eventCol, strings.Join(cols, ", "))
	}
	keep, err := d.compared(cols, src.what)
	if err != nil {
		return rowLayout{}, err
	}
	var compared []string
	for _, i := range keep {
		compared = append(compared, cols[i])
	}
	return rowLayout{key: ki, event: ei, keep: keep, compared: compared}, nil
}

// row is the Row of one scanned row's values, vals.
func (l rowLayout) row(vals []any) Row {
	strs := make([]string, len(vals))
	for i, v := range vals {
		strs[i] = text(v)
	}
	r := Row{Key: strs[l.key], Columns: l.compared}
	if l.event >= 0 {
		r.Event = strs[l.event]
	}
	values := make([]string, len(l.keep))
	for j, i := range l.keep {
		values[j] = strs[i]
	}
	b, _ := json.Marshal(values)
	r.Values = string(b)
	return r
}

// compared returns the indexes of the columns a row's Values hold: all of
// cols but those ignore_columns names, each of which must be one of them.
func (d *DB) compared(cols []string, what string) ([]int, error) {
	ignored := map[int]bool{}
	for _, name := range d.spec.IgnoreColumns {
		found := false
		for i, c := range cols {
			if strings.EqualFold(c, name) {
				ignored[i], found = true, true
			}
		}
		if !found {
			verb := "has"
			if d.spec.Query != "" {
				verb = "returns"
			}
			return nil, errorf("%s in %s has no column %s, which ignore_columns names (it %s %s)", what, d.where, name, verb, strings.Join(cols, ", "))
		}
	}
	keep := make([]int, 0, len(cols))
	for i := range cols {
		if !ignored[i] {
			keep = append(keep, i)
		}
	}
	return keep, nil
}

// Count counts the rows of a table of the consumer's database.
func (d *DB) Count(ctx context.Context, table string) (int64, error) {
	if !d.exists() {
		return 0, errorf("the effects database %s does not exist", d.where)
	}
	var n int64
	if err := d.s.conn().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+d.quote(table)).Scan(&n); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, errorf("cannot count the rows of %s in %s: %v", table, d.where, oneLine(err))
	}
	return n, nil
}

// text writes a column value as text, the same way for every driver.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(x)
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// Check holds what a file's effects ask to what redeliver can do with the
// database they name: reset only where the user plainly meant it (see
// CheckReset), and the statement proxy only on PostgreSQL reached without
// TLS (see CheckProxy).
func Check(e *scenario.Effects) *problem.Error {
	if err := CheckReset(e); err != nil {
		return err
	}
	return CheckProxy(e)
}

// CheckProxy refuses proxy: true where the proxy cannot stand between the
// consumer and its database: a SQLite database, a PostgreSQL or MySQL
// one reached over a unix socket, or one that asks for TLS.
func CheckProxy(e *scenario.Effects) *problem.Error {
	if e == nil || !e.Proxy {
		return nil
	}
	p, err := Parse(e.DB)
	if err != nil {
		return problem.Invalid(e.DBPos, "db is %v", err)
	}
	return dialectOf(p.Kind).checkProxy(e, p)
}

// Upstream is the host:port the proxy relays to: the first host the
// connection string names.
func Upstream(dsn string) (string, error) {
	p, err := Parse(dsn)
	if err != nil {
		return "", err
	}
	if len(p.Hosts) == 0 {
		return "", errors.New("db names no host")
	}
	return p.Hosts[0], nil
}

// ProxyURL is dsn pointed at the proxy's addr (127.0.0.1:PORT), without
// TLS: the connection string the consumer gets as ${REDELIVER_DB_URL}.
func ProxyURL(dsn, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	return dialectFor(dsn).proxyURL(dsn, host, port)
}

// JDBCURL is dsn pointed at the proxy's addr as the database's JDBC
// driver reads it, the connection string a consumer on the JVM gets as
// ${REDELIVER_JDBC_URL}: PgJDBC's jdbc:postgresql://127.0.0.1:PORT/DB?…
// or Connector/J's jdbc:mysql://….
func JDBCURL(dsn, addr string) (string, error) { return dialectFor(dsn).jdbcURL(dsn, addr) }

// Blocked reports whether any of the PostgreSQL server processes (or
// MySQL threads, as InnoDB's information_schema.innodb_trx says) pids
// waits for a lock: a worker held by the proxy holds it, and the others
// can go no further until it is let go.
func (d *DB) Blocked(ctx context.Context, pids []int32) (bool, error) {
	if len(pids) == 0 {
		return false, nil
	}
	return d.s.blocked(ctx, pids)
}

// Busy lists those of the PostgreSQL server processes (or MySQL
// threads) pids that are still there and not idle: running a query, or
// inside a transaction, holding what locks they took. An idle one holds
// none and goes when its socket closes.
func (d *DB) Busy(ctx context.Context, pids []int32) ([]int32, error) {
	if len(pids) == 0 {
		return nil, nil
	}
	return d.s.busy(ctx, pids)
}

// scanIDs reads the one column of rows as ids.
func scanIDs(rows *sql.Rows, err error) ([]int32, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int32
	for rows.Next() {
		var pid int32
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		out = append(out, pid)
	}
	return out, rows.Err()
}

// idList is pids written for an IN list.
func idList(pids []int32) string {
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(int(p))
	}
	return strings.Join(list, ",")
}

// ServerVersion is the PostgreSQL server's version as a number
// (server_version_num: 150004 for 15.4); 0 for another database.
func (d *DB) ServerVersion(ctx context.Context) (int, error) { return d.s.serverVersion(ctx) }

// Terminate ends the PostgreSQL server processes pids
// (pg_terminate_backend, which a role may run on its own processes), or
// the MySQL threads (KILL QUERY, then KILL CONNECTION): the server rolls
// back what they were doing at once, as after a crash.
func (d *DB) Terminate(ctx context.Context, pids []int32) error {
	if len(pids) == 0 {
		return nil
	}
	return d.s.terminate(ctx, pids)
}
