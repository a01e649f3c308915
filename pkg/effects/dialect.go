package effects

import (
	"context"
	"database/sql"
	"strings"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// A dialect is one kind of database a consumer under test writes to:
// how its connection strings are recognised and resolved, how it is
// opened for judging, and what only it can say of a connection string
// the statement proxy stands in (postgres.go, mysql.go, sqlite.go). A
// database is added as one dialect and its row in dialects; nothing else
// in this package asks which kind a database is.
type dialect interface {
	// kind is its name among the kinds (Postgres, MySQL, SQLite), and
	// name the same in words (PostgreSQL).
	kind() string
	name() string
	// names reports whether dsn is a connection string of this database.
	names(dsn string) bool
	// place resolves dsn as its driver resolves it; nothing is dialled.
	place(dsn string) (*Place, error)
	// open opens what reads and resets the database at dsn, resolved to
	// place.
	open(dsn string, place *Place, spec *scenario.Effects) (session, error)
	// checkProxy refuses proxy: true where the proxy cannot stand
	// between the consumer and this database (e.DB resolved to p).
	checkProxy(e *scenario.Effects, p *Place) *problem.Error
	// proxyURL is dsn pointed at the proxy's addr, without TLS, and
	// jdbcURL the same as a JDBC driver reads it.
	proxyURL(dsn, host, port string) (string, error)
	jdbcURL(dsn, addr string) (string, error)
	// says is the database's own message in err, if err is its error;
	// refusedWrite whether err refused a write in a read-only
	// transaction or connection.
	says(err error) (string, bool)
	refusedWrite(err error) bool
}

// A session is one database opened for judging, as its dialect opens,
// reads and ends it. What a kind cannot do (a SQLite file has no server
// processes) answers nothing.
type session interface {
	// conn is what reads and resets.
	conn() *sql.DB
	close() error
	// exists reports whether the database is there yet (a SQLite file a
	// consumer creates on its first delivery).
	exists() bool
	// quote quotes one name (no dots); keyWhere filters a table's rows to
	// the key of column col, its one argument; keyQuery is the effects
	// query q filtered to one key's rows as a subquery.
	quote(name string) string
	keyWhere(col string) string
	keyQuery(q string) string
	// query runs a read of the effect rows; readOnly the user's query
	// where the database refuses a write (done, when not nil, ends it).
	query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	readOnly(ctx context.Context, q string, args ...any) (rows *sql.Rows, done func(), err error)
	// lockHolder names a session that holds a lock one of redeliver's
	// connections waits for, and the statement that ends it, or "" when
	// none waits; watchesLocks reports whether it can say.
	watchesLocks() bool
	lockHolder(ctx context.Context) (holder, end string, err error)
	// The server processes (threads) of a consumer's connections: which
	// wait on a lock, which are not idle, ending them, and the server's
	// version (PostgreSQL's server_version_num, else 0).
	blocked(ctx context.Context, pids []int32) (bool, error)
	busy(ctx context.Context, pids []int32) ([]int32, error)
	terminate(ctx context.Context, pids []int32) error
	serverVersion(ctx context.Context) (int, error)
	// guardianDSN is the DSN a guardian of the consumer's connections is
	// given, where a server cannot notice by itself that a client died
	// (guardian.go); "" where none is needed.
	guardianDSN() string
}

// server is what the sessions of a database server (postgres.go,
// mysql.go) share: one pool, which reads and is there from the start.
type server struct{ db *sql.DB }

func (s server) conn() *sql.DB { return s.db }
func (s server) close() error  { return s.db.Close() }
func (s server) exists() bool  { return true }

func (s server) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.db.QueryContext(ctx, q, args...)
}

// readOnly runs q in a READ ONLY transaction, which done rolls back.
func (s server) readOnly(ctx context.Context, q string, args ...any) (*sql.Rows, func(), error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, err
	}
	done := func() { _ = tx.Rollback() }
	rows, err := tx.QueryContext(ctx, q, args...)
	return rows, done, err
}

// dialects are the databases a consumer's connection string may name,
// in the order they are tried: the first that names it is its kind. The
// last, SQLite, names anything the others do not (a file path).
var dialects = []dialect{postgresDialect{}, mysqlDialect{}, sqliteDialect{}}

// dialectFor is the dialect of a connection string.
func dialectFor(dsn string) dialect {
	for _, d := range dialects {
		if d.names(dsn) {
			return d
		}
	}
	return dialects[len(dialects)-1]
}

// dialectOf is the dialect of a kind.
func dialectOf(kind string) dialect {
	for _, d := range dialects {
		if d.kind() == kind {
			return d
		}
	}
	return dialects[len(dialects)-1]
}

// KindOf is the kind of database a connection string names: a
// postgres:// URL or a libpq keyword string (host=… dbname=…) is
// PostgreSQL, a mysql:// URL or a Go MySQL DSN (user:pw@tcp(host)/db)
// is MySQL, anything else a SQLite file.
func KindOf(dsn string) string { return dialectFor(dsn).kind() }

// KindName is the kind in words: PostgreSQL, MySQL or SQLite.
func KindName(kind string) string { return dialectOf(kind).name() }

// Parse resolves a connection string as its driver does: postgres://…
// as pgx resolves it (PGHOST and the other PG* variables fill in what
// the URL leaves out, several hosts are all tried), mysql://… as the
// MySQL driver dials it (no host is 127.0.0.1:3306), anything else a
// SQLite file. Its errors never show a password the string may hold.
func Parse(dsn string) (*Place, error) { return dialectFor(dsn).place(dsn) }

// oneLine is err's message on one line: the database's own, where it is
// the database's error.
func oneLine(err error) string {
	for _, d := range dialects {
		if msg, ok := d.says(err); ok {
			return msg
		}
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}

// wrote reports a database's refusal of a write in a read-only
// transaction or connection.
func wrote(err error) bool {
	for _, d := range dialects {
		if d.refusedWrite(err) {
			return true
		}
	}
	return false
}
