// Package effects reads the business effects a consumer under test wrote
// into its own database — PostgreSQL, MySQL/MariaDB or a SQLite file — so
// that they can be judged. It runs only the reset statements the scenario
// names and otherwise only reads: it never creates, alters or drops a
// table of the user's.
//
// It also owns where a connection string leads and whether it may be reset
// (place.go). Of this module it imports pkg/escape, pkg/problem, pkg/rawio,
// pkg/redact and pkg/scenario; it links the PostgreSQL, MySQL and SQLite
// drivers, and no broker client or store of the built-in handler.
package effects

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/rawio"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
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

// DB is the consumer's database, opened for judging.
type DB struct {
	db    *sql.DB
	ro    *sql.DB // SQLite: the file under PRAGMA query_only, for the query
	kind  string
	where string // the database in words, without its user or password
	path  string // SQLite: the file
	spec  *scenario.Effects
	// SQLite: the statements a replay runs once per delivery, prepared
	// once (parsing them cost as much as running them).
	stmtMu sync.Mutex
	stmts  map[*sql.DB]map[string]*sql.Stmt
	// app is the application_name of redeliver's own PostgreSQL
	// connections, by which a reset or a read that waits on a lock is
	// found; on MySQL, own holds the thread ids of its connections
	// instead. lockWait is how long it may wait before the holder is
	// named.
	app      string
	own      *threadIDs
	lockWait time.Duration
	// dsn is the driver's DSN, which a guardian is given (guardian.go).
	dsn string
	// SQLite: the file was there when a key's rows were read; the next
	// reads of a key's rows do not look for it again (a replay reads them
	// at every redelivery).
	found atomic.Bool
	// MySQL: when Blocked last asked InnoDB, and what it said (see
	// blockedEvery).
	blockedMu  sync.Mutex
	blockedAt  time.Time
	blockedWas bool
}

// blockedEvery is how often Blocked asks InnoDB on MySQL: its
// information_schema.innodb_trx is a cache refreshed only when it was
// not read for 100 ms, so asking more often would keep it stale for ever.
const blockedEvery = 150 * time.Millisecond

// Where names the database in words, without its user or password:
// "PostgreSQL 127.0.0.1:5432/test", "SQLite file effects.db".
func (d *DB) Where() string { return d.where }

// Kind is postgres, mysql or sqlite.
func (d *DB) Kind() string { return d.kind }

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
	if p.Kind == SQLite {
		return "SQLite file " + redact.String(p.Name)
	}
	return p.String()
}

// parse turns the db of a scenario into a driver, a driver DSN and a
// description.
func parse(dsn string) (kind, driverDSN, where string, err error) {
	place, err := Parse(dsn)
	if err != nil {
		return "", "", "", errorf("the effects db is %v", err)
	}
	where = whereOf(place)
	switch place.Kind {
	case Postgres:
		return Postgres, dsn, where, nil
	case MySQL:
		if NativeMySQL(dsn) {
			// Already the driver's own form.
			return MySQL, dsn, where, nil
		}
		u, err := url.Parse(dsn)
		if err != nil {
			return "", "", "", errorf("the effects db is not a valid MySQL URL")
		}
		cfg := mysql.NewConfig()
		cfg.Net = "tcp"
		cfg.Addr = u.Host
		if u.Port() == "" {
			cfg.Addr = u.Host + ":3306"
		}
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
		cfg.DBName = strings.TrimPrefix(u.Path, "/")
		cfg.Params = map[string]string{}
		for k, v := range u.Query() {
			cfg.Params[k] = v[0]
		}
		return MySQL, cfg.FormatDSN(), where, nil
	}
	path := place.Name
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", "", errorf("the effects db %s is not a usable path: %v", redact.String(path), err)
	}
	return SQLite, abs, where, nil
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
	kind, dsn, where, err := parse(spec.DB)
	if err != nil {
		return nil, err
	}
	d := &DB{kind: kind, where: where, spec: spec, lockWait: LockWait}
	switch kind {
	case Postgres:
		d.db, d.app, err = openPostgres(dsn)
	case MySQL:
		d.db, d.own, err = openMySQL(dsn)
		d.dsn = dsn
	default:
		d.path = dsn
		// Read and reset only: the consumer owns the file; wait for its
		// writers instead of failing with "database is locked".
		d.db, err = sql.Open("sqlite", "file:"+dsn+"?mode=rw&_pragma=busy_timeout(10000)")
		d.db.SetMaxOpenConns(1)
		if err == nil && spec.Query != "" {
			// The user's query runs where SQLite refuses any write.
			d.ro, err = sql.Open("sqlite", "file:"+dsn+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
			if err != nil {
				d.db.Close()
			}
		}
	}
	if err != nil {
		return nil, errorf("cannot open the effects database %s: %v", where, err)
	}
	if kind != SQLite {
		if err := d.db.PingContext(ctx); err != nil {
			d.db.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errorf("cannot reach the effects database %s: %v", where, oneLine(err))
		}
	}
	return d, nil
}

// openPostgres opens a PostgreSQL effects database whose connections read
// and write their sockets with raw system calls (pkg/rawio): a replay into
// a target reads a redelivery's rows before and after it, and on the one
// processor it runs on, each ordinary system call woke the runtime's
// monitor thread. A URL pgx cannot parse is opened as before, and its
// error comes when it is first reached.
func openPostgres(dsn string) (*sql.DB, string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		db, err := sql.Open("pgx", dsn)
		return db, "", err
	}
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawio.Conn(c), nil
	}
	app := cfg.RuntimeParams["application_name"]
	if app == "" {
		app = fmt.Sprintf("redeliver %d", os.Getpid())
		cfg.RuntimeParams["application_name"] = app
	}
	return stdlib.OpenDB(*cfg), app, nil
}

// Close closes the connection.
func (d *DB) Close() error {
	d.stmtMu.Lock()
	for _, m := range d.stmts {
		for _, st := range m {
			st.Close()
		}
	}
	d.stmts = nil
	d.stmtMu.Unlock()
	if d.ro != nil {
		d.ro.Close()
	}
	return d.db.Close()
}

// exists reports whether a SQLite file is there yet.
func (d *DB) exists() bool {
	if d.kind != SQLite {
		return true
	}
	_, err := os.Stat(d.path)
	return err == nil
}

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
			_, err := d.db.ExecContext(ctx, stmt)
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
		rows, err = d.db.QueryContext(ctx, q)
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
	if d.kind == SQLite {
		rows, err := d.query(ctx, d.ro, q, args...)
		return rows, nil, err
	}
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = tx.Rollback() }
	rows, err := tx.QueryContext(ctx, q, args...)
	return rows, done, err
}

// keyQuery is the effects query q filtered to the rows of one key, its
// one argument: q as a subquery (without a closing semicolon).
// query runs q on db; on SQLite through a statement prepared once. A
// statement that cannot be prepared (its table not there yet) is not
// kept: q runs plainly, and fails as it would have.
func (d *DB) query(ctx context.Context, db *sql.DB, q string, args ...any) (*sql.Rows, error) {
	if d.kind != SQLite {
		return db.QueryContext(ctx, q, args...)
	}
	d.stmtMu.Lock()
	st := d.stmts[db][q]
	if st == nil {
		var err error
		if st, err = db.PrepareContext(ctx, q); err != nil {
			d.stmtMu.Unlock()
			return db.QueryContext(ctx, q, args...)
		}
		if d.stmts == nil {
			d.stmts = map[*sql.DB]map[string]*sql.Stmt{}
		}
		if d.stmts[db] == nil {
			d.stmts[db] = map[string]*sql.Stmt{}
		}
		d.stmts[db][q] = st
	}
	d.stmtMu.Unlock()
	return st.QueryContext(ctx, args...)
}

func (d *DB) keyQuery(q string) string {
	q = strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")
	switch d.kind {
	case Postgres:
		return "SELECT * FROM (" + q + "\n) q WHERE q.key::text = $1"
	case MySQL:
		return "SELECT * FROM (" + q + "\n) q WHERE q.`key` = ?"
	}
	return "SELECT * FROM (" + q + "\n) q WHERE q.\"key\" = ?"
}

// readError says why a read failed; a write the database refused is
// named as such.
func (d *DB) readError(what string, err error) error {
	if wrote(err) {
		return errorf("%s must only read, and %s refused it as a write: %v", what, d.where, oneLine(err))
	}
	return errorf("cannot read %s in %s: %v", what, d.where, oneLine(err))
}

// wrote reports a database's refusal of a write in a read-only
// transaction or connection.
func wrote(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "25006" // read_only_sql_transaction
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	}
	return strings.Contains(err.Error(), "attempt to write a readonly database")
}

// quote quotes a (possibly schema-qualified) name for the database.
func (d *DB) quote(name string) string {
	q := `"`
	if d.kind == MySQL {
		q = "`"
	}
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = q + p + q
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
			switch d.kind {
			case Postgres:
				q += " WHERE " + d.quote(src.keyCol) + "::text = $1"
			default:
				q += " WHERE " + d.quote(src.keyCol) + " = ?"
			}
			args = append(args, *key)
		}
		rows, err = d.query(ctx, d.db, q, args...)
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
			return errorf("the effects query returns no column named key (it returns %s); write SELECT your_key_column AS key …", strings.Join(cols, ", "))
		}
		return errorf("the effects table %s in %s has no column %s (it has %s)", d.spec.Table, d.where, src.keyCol, strings.Join(cols, ", "))
	}
	if src.eventCol != "" && ei < 0 && d.spec.Query == "" {
		return errorf("the effects table %s in %s has no column %s (it has %s)", d.spec.Table, d.where, src.eventCol, strings.Join(cols, ", "))
	}
	keep, err := d.compared(cols, what)
	if err != nil {
		return err
	}
	var compared []string
	for _, i := range keep {
		compared = append(compared, cols[i])
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
		strs := make([]string, len(vals))
		for i, v := range vals {
			strs[i] = text(v)
		}
		r := Row{Key: strs[ki], Columns: compared}
		if ei >= 0 {
			r.Event = strs[ei]
		}
		values := make([]string, len(keep))
		for j, i := range keep {
			values[j] = strs[i]
		}
		b, _ := json.Marshal(values)
		r.Values = string(b)
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
	if err := d.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+d.quote(table)).Scan(&n); err != nil {
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

func oneLine(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Message
	}
	return strings.Join(strings.Fields(err.Error()), " ")
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
	switch {
	case p.Kind == SQLite:
		return problem.Invalid(e.ProxyPos, "proxy: true relays the PostgreSQL and MySQL wire protocols, and db is a SQLite file, which the consumer opens with no wire between: use a PostgreSQL or MySQL database, or remove proxy")
	case p.Kind == MySQL && (len(p.Hosts) == 0 || !strings.Contains(p.Hosts[0], ":")):
		return problem.Invalid(e.ProxyPos, "proxy: true relays TCP connections, and db is reached over a unix socket: name the database's host and port (tcp(127.0.0.1:3306))")
	case p.Kind == MySQL:
		if mode := mysqlTLS(e.DB); mode != "" && mode != "false" && mode != "preferred" {
			return problem.Invalid(e.ProxyPos, "proxy: true relays plain TCP, and db asks for tls=%s: the proxy offers no TLS to the consumer and speaks none to the database; test against a database reachable without TLS, or remove proxy", mode)
		}
		return nil
	case len(p.Hosts) == 0 || strings.HasPrefix(p.Hosts[0], "/"):
		return problem.Invalid(e.ProxyPos, "proxy: true relays TCP connections, and db is reached over a unix socket: name the database's host and port (host=127.0.0.1 port=5432)")
	}
	if mode := sslMode(e.DB); mode == "require" || mode == "verify-ca" || mode == "verify-full" {
		return problem.Invalid(e.ProxyPos, "proxy: true relays plain TCP, and db asks for sslmode=%s: the proxy speaks no TLS to the consumer or to the database; test against a database reachable without TLS, or remove proxy", mode)
	}
	return nil
}

// sslMode is the sslmode a PostgreSQL connection string asks for, or "".
func sslMode(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		return u.Query().Get("sslmode")
	}
	for _, f := range strings.Fields(dsn) {
		if v, ok := strings.CutPrefix(f, "sslmode="); ok {
			return strings.Trim(v, "'")
		}
	}
	return ""
}

// mysqlTLS is the tls a MySQL URL or Go DSN asks for, or "".
func mysqlTLS(dsn string) string {
	if NativeMySQL(dsn) {
		if cfg, err := mysql.ParseDSN(dsn); err == nil {
			return cfg.TLSConfig
		}
		return ""
	}
	if u, err := url.Parse(dsn); err == nil {
		return u.Query().Get("tls")
	}
	return ""
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
	if NativeMySQL(dsn) {
		// The driver's own form, host and port replaced.
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", errors.New("db is not a Go MySQL DSN the driver can use")
		}
		cfg.Net, cfg.Addr = "tcp", addr
		return cfg.FormatDSN(), nil
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme == "mysql" {
		u.Host = addr
		return u.String(), nil
	}
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = addr
		q := u.Query()
		q.Set("sslmode", "disable")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// A libpq keyword string: host, port and sslmode replaced.
	var out []string
	for _, f := range strings.Fields(dsn) {
		k, _, _ := strings.Cut(f, "=")
		switch strings.TrimSpace(k) {
		case "host", "hostaddr", "port", "sslmode":
			continue
		}
		out = append(out, f)
	}
	out = append(out, "host="+host, "port="+port, "sslmode=disable")
	return strings.Join(out, " "), nil
}

// JDBCURL is dsn pointed at the proxy's addr as PgJDBC reads it, the
// connection string a consumer on the JVM gets as ${REDELIVER_JDBC_URL}:
// jdbc:postgresql://127.0.0.1:PORT/DB?user=…&password=…&sslmode=disable,
// with currentSchema set to the search_path dsn gives (as a URL parameter
// pgx reads, or in options=-csearch_path=…, as libpq reads it).
func JDBCURL(dsn, addr string) (string, error) {
	if KindOf(dsn) == MySQL {
		return mysqlJDBCURL(dsn, addr)
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", redact.Error(err)
	}
	q := url.Values{}
	if cfg.User != "" {
		q.Set("user", cfg.User)
	}
	if cfg.Password != "" {
		q.Set("password", cfg.Password)
	}
	q.Set("sslmode", "disable")
	if sp := searchPath(cfg.RuntimeParams); sp != "" {
		q.Set("currentSchema", sp)
	}
	db := cfg.Database
	if db == "" {
		db = cfg.User
	}
	return "jdbc:postgresql://" + addr + "/" + url.PathEscape(db) + "?" + q.Encode(), nil
}

// mysqlJDBCURL is a MySQL dsn pointed at the proxy's addr as MySQL
// Connector/J reads it: jdbc:mysql://127.0.0.1:PORT/DB?user=…&password=…,
// without TLS, and allowed to fetch the server's RSA key for
// caching_sha2_password's full exchange in plain TCP.
func mysqlJDBCURL(dsn, addr string) (string, error) {
	_, native, _, err := parse(dsn)
	if err != nil {
		return "", err
	}
	cfg, err := mysql.ParseDSN(native)
	if err != nil {
		return "", errors.New("db is not a MySQL connection string the driver can use")
	}
	q := url.Values{}
	if cfg.User != "" {
		q.Set("user", cfg.User)
	}
	if cfg.Passwd != "" {
		q.Set("password", cfg.Passwd)
	}
	q.Set("sslMode", "DISABLED")
	q.Set("allowPublicKeyRetrieval", "true")
	return "jdbc:mysql://" + addr + "/" + url.PathEscape(cfg.DBName) + "?" + q.Encode(), nil
}

// searchPathOption is a search_path set in libpq's options: -c
// search_path=a,b or -csearch_path=a,b.
var searchPathOption = regexp.MustCompile(`(?:^|\s)-c\s*search_path=(\S+)`)

// searchPath is the search_path runtime parameters set, or "".
func searchPath(params map[string]string) string {
	if sp := params["search_path"]; sp != "" {
		return sp
	}
	if m := searchPathOption.FindStringSubmatch(params["options"]); m != nil {
		return m[1]
	}
	return ""
}

// Blocked reports whether any of the PostgreSQL server processes (or
// MySQL threads, as InnoDB's information_schema.innodb_trx says) pids
// waits for a lock: a worker held by the proxy holds it, and the others
// can go no further until it is let go.
func (d *DB) Blocked(ctx context.Context, pids []int32) (bool, error) {
	if d.kind == MySQL && len(pids) > 0 {
		// InnoDB's own view, which MySQL 8 and MariaDB both give.
		d.blockedMu.Lock()
		defer d.blockedMu.Unlock()
		if time.Since(d.blockedAt) < blockedEvery {
			return d.blockedWas, nil
		}
		var n int
		err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id IN ("+idList(pids)+") AND trx_state = 'LOCK WAIT'").Scan(&n)
		d.blockedAt, d.blockedWas = time.Now(), n > 0 && err == nil
		return n > 0, err
	}
	if d.kind != Postgres || len(pids) == 0 {
		return false, nil
	}
	list := make([]string, len(pids))
	for i, p := range pids {
		list[i] = strconv.Itoa(int(p))
	}
	var n int
	err := d.db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid IN ("+strings.Join(list, ",")+") AND wait_event_type = 'Lock'").Scan(&n)
	return n > 0, err
}

// Busy lists those of the PostgreSQL server processes (or MySQL
// threads) pids that are still there and not idle: running a query, or
// inside a transaction, holding what locks they took. An idle one holds
// none and goes when its socket closes.
func (d *DB) Busy(ctx context.Context, pids []int32) ([]int32, error) {
	if (d.kind != Postgres && d.kind != MySQL) || len(pids) == 0 {
		return nil, nil
	}
	q, args := "SELECT pid FROM pg_stat_activity WHERE pid = ANY($1) AND state IS DISTINCT FROM 'idle'", []any{pids}
	if d.kind == MySQL {
		// A thread is busy running a command, or idle with a
		// transaction open (InnoDB's).
		list := idList(pids)
		q, args = "SELECT id FROM information_schema.processlist WHERE id IN ("+list+") AND (command <> 'Sleep' OR id IN (SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id IN ("+list+")))", nil
	}
	rows, err := d.db.QueryContext(ctx, q, args...)
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

// unknownThread reports whether a KILL found no such thread (1094).
func unknownThread(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1094
}

// ServerVersion is the PostgreSQL server's version as a number
// (server_version_num: 150004 for 15.4); 0 for another database.
func (d *DB) ServerVersion(ctx context.Context) (int, error) {
	if d.kind != Postgres {
		return 0, nil
	}
	var v int
	err := d.db.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v)
	return v, err
}

// Terminate ends the PostgreSQL server processes pids
// (pg_terminate_backend, which a role may run on its own processes), or
// the MySQL threads (KILL CONNECTION): the server rolls back what they
// were doing at once, as after a crash.
func (d *DB) Terminate(ctx context.Context, pids []int32) error {
	if d.kind == MySQL {
		// KILL QUERY for every thread first: killed one at a time, a
		// thread waiting on another's lock would be let go when the
		// holder died and run its statement to its commit, after the
		// kill. Then KILL CONNECTION: the server rolls back each
		// thread's transaction and ends it. One already gone is no
		// error.
		for _, kill := range []string{"KILL QUERY ", "KILL CONNECTION "} {
			for _, pid := range pids {
				if _, err := d.db.ExecContext(ctx, kill+strconv.Itoa(int(pid))); err != nil && !unknownThread(err) {
					return err
				}
			}
		}
		return nil
	}
	if d.kind != Postgres || len(pids) == 0 {
		return nil
	}
	_, err := d.db.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS t(pid)", pids)
	return err
}
