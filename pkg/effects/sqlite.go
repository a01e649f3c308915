package effects

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// sqliteDialect is a SQLite file, through modernc.org/sqlite: whatever
// connection string no other dialect names.
type sqliteDialect struct{}

func (sqliteDialect) kind() string        { return SQLite }
func (sqliteDialect) name() string        { return "SQLite" }
func (sqliteDialect) names(s string) bool { return true }

func (sqliteDialect) place(dsn string) (*Place, error) {
	return &Place{Kind: SQLite, Name: strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:"), File: true}, nil
}

// open opens the file to read and reset only: the consumer owns it, and
// a busy timeout waits for its writers instead of failing with
// "database is locked". The user's query runs on a second handle where
// SQLite refuses any write.
func (sqliteDialect) open(_ string, p *Place, spec *scenario.Effects) (session, error) {
	path, err := filepath.Abs(p.Name)
	if err != nil {
		return nil, errorf("the effects db %s is not a usable path: %v", redact.String(p.Name), err)
	}
	s := &liteSession{path: path}
	s.db, err = sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	s.db.SetMaxOpenConns(1)
	if spec.Query != "" {
		if s.ro, err = sql.Open("sqlite", "file:"+path+"?mode=rw&_pragma=busy_timeout(10000)&_pragma=query_only(1)"); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

func (sqliteDialect) checkProxy(e *scenario.Effects, _ *Place) *problem.Error {
	return problem.Invalid(e.ProxyPos, "proxy: true relays the PostgreSQL and MySQL wire protocols, and db is a SQLite file, which the consumer opens with no wire between: use a PostgreSQL or MySQL database, or remove proxy")
}

func (sqliteDialect) proxyURL(dsn, _, _ string) (string, error) { return dsn, nil }
func (sqliteDialect) jdbcURL(string, string) (string, error)    { return "", nil }
func (sqliteDialect) says(error) (string, bool)                 { return "", false }

func (sqliteDialect) refusedWrite(err error) bool {
	return strings.Contains(err.Error(), "attempt to write a readonly database")
}

// liteSession is a SQLite file opened for judging: db reads and resets,
// ro runs the user's query under PRAGMA query_only.
type liteSession struct {
	db, ro *sql.DB
	path   string
	// The statements a replay runs once per delivery, prepared once
	// (parsing them cost as much as running them).
	stmtMu sync.Mutex
	stmts  map[*sql.DB]map[string]*sql.Stmt
}

func (s *liteSession) conn() *sql.DB { return s.db }

func (s *liteSession) close() error {
	s.stmtMu.Lock()
	for _, m := range s.stmts {
		for _, st := range m {
			st.Close()
		}
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.ro != nil {
		s.ro.Close()
	}
	return s.db.Close()
}

func (s *liteSession) exists() bool {
	_, err := os.Stat(s.path)
	return err == nil
}

func (s *liteSession) quote(name string) string   { return `"` + name + `"` }
func (s *liteSession) keyWhere(col string) string { return " WHERE " + s.quote(col) + " = ?" }
func (s *liteSession) keyQuery(q string) string {
	return "SELECT * FROM (" + q + "\n) q WHERE q.\"key\" = ?"
}

func (s *liteSession) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.prepared(ctx, s.db, q, args...)
}

func (s *liteSession) readOnly(ctx context.Context, q string, args ...any) (*sql.Rows, func(), error) {
	rows, err := s.prepared(ctx, s.ro, q, args...)
	return rows, nil, err
}

// prepared runs q on db through a statement prepared once. A statement
// that cannot be prepared (its table not there yet) is not kept: q runs
// plainly, and fails as it would have.
func (s *liteSession) prepared(ctx context.Context, db *sql.DB, q string, args ...any) (*sql.Rows, error) {
	s.stmtMu.Lock()
	st := s.stmts[db][q]
	if st == nil {
		var err error
		if st, err = db.PrepareContext(ctx, q); err != nil {
			s.stmtMu.Unlock()
			return db.QueryContext(ctx, q, args...)
		}
		if s.stmts == nil {
			s.stmts = map[*sql.DB]map[string]*sql.Stmt{}
		}
		if s.stmts[db] == nil {
			s.stmts[db] = map[string]*sql.Stmt{}
		}
		s.stmts[db][q] = st
	}
	s.stmtMu.Unlock()
	return st.QueryContext(ctx, args...)
}

// A SQLite file has no server and no sessions of its own: no lock to
// name, no process to end, and a busy timeout for its writers.
func (s *liteSession) watchesLocks() bool                                 { return false }
func (s *liteSession) lockHolder(context.Context) (string, string, error) { return "", "", nil }
func (s *liteSession) blocked(context.Context, []int32) (bool, error)     { return false, nil }
func (s *liteSession) busy(context.Context, []int32) ([]int32, error)     { return nil, nil }
func (s *liteSession) terminate(context.Context, []int32) error           { return nil }
func (s *liteSession) serverVersion(context.Context) (int, error)         { return 0, nil }
func (s *liteSession) guardianDSN() string                                { return "" }
