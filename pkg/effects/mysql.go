package effects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// mysqlDialect is MySQL and MariaDB, through the Go MySQL driver.
type mysqlDialect struct{}

func (mysqlDialect) kind() string { return MySQL }
func (mysqlDialect) name() string { return "MySQL" }

// nativeMySQL is a Go MySQL driver DSN: [user[:password]@]net(addr)/db.
var nativeMySQL = regexp.MustCompile(`^([^/]*@)?(tcp|tcp4|tcp6|unix)\([^)]*\)/`)

// NativeMySQL reports whether dsn is written the Go MySQL driver's way
// (root:pw@tcp(127.0.0.1:3306)/test) rather than as a mysql:// URL.
func NativeMySQL(dsn string) bool { return nativeMySQL.MatchString(dsn) }

func (mysqlDialect) names(dsn string) bool {
	return strings.HasPrefix(dsn, "mysql://") || NativeMySQL(dsn)
}

func (mysqlDialect) place(dsn string) (*Place, error) {
	if NativeMySQL(dsn) {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return nil, errors.New("not a Go MySQL DSN the driver can use (USER:PASSWORD@tcp(HOST:PORT)/DATABASE)")
		}
		addr := cfg.Addr
		if cfg.Net != "unix" && addr == "" {
			addr = "127.0.0.1:3306"
		}
		return &Place{Kind: MySQL, Hosts: []string{addr}, Name: cfg.DBName}, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, errors.New("not a valid MySQL URL (mysql://USER@HOST:PORT/DATABASE)")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	return &Place{Kind: MySQL, Hosts: []string{net.JoinHostPort(host, port)}, Name: strings.TrimPrefix(u.Path, "/")}, nil
}

// mysqlDriverDSN is a mysql:// URL in the driver's own form; a Go MySQL DSN
// is that already.
func mysqlDriverDSN(dsn string) (string, error) {
	if NativeMySQL(dsn) {
		return dsn, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errorf("the effects db is not a valid MySQL URL")
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
	return cfg.FormatDSN(), nil
}

func (mysqlDialect) open(dsn string, _ *Place, _ *scenario.Effects) (session, error) {
	native, err := mysqlDriverDSN(dsn)
	if err != nil {
		return nil, err
	}
	db, own, err := openMySQL(native)
	if err != nil {
		return nil, err
	}
	return &mySession{server: server{db}, own: own, dsn: native}, nil
}

// openMySQL opens a MySQL effects database whose connections' thread ids
// are kept. A DSN the driver cannot parse is opened as before, and its
// error comes when it is first reached.
func openMySQL(dsn string) (*sql.DB, *threadIDs, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		db, err := sql.Open("mysql", dsn)
		return db, nil, err
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	own := &threadIDs{ids: map[int64]struct{}{}}
	return sql.OpenDB(ownConnector{c, own}), own, nil
}

func (mysqlDialect) checkProxy(e *scenario.Effects, p *Place) *problem.Error {
	if len(p.Hosts) == 0 || !strings.Contains(p.Hosts[0], ":") {
		return problem.Invalid(e.ProxyPos, "proxy: true relays TCP connections, and db is reached over a unix socket: name the database's host and port (tcp(127.0.0.1:3306))")
	}
	if mode := mysqlTLS(e.DB); mode != "" && mode != "false" && mode != "preferred" {
		return problem.Invalid(e.ProxyPos, "proxy: true relays plain TCP, and db asks for tls=%s: the proxy offers no TLS to the consumer and speaks none to the database; test against a database reachable without TLS, or remove proxy", mode)
	}
	return nil
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

func (mysqlDialect) proxyURL(dsn, host, port string) (string, error) {
	addr := net.JoinHostPort(host, port)
	if NativeMySQL(dsn) {
		// The driver's own form, host and port replaced.
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", errors.New("db is not a Go MySQL DSN the driver can use")
		}
		cfg.Net, cfg.Addr = "tcp", addr
		return cfg.FormatDSN(), nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u.Host = addr
	return u.String(), nil
}

// jdbcURL is MySQL Connector/J's: jdbc:mysql://127.0.0.1:PORT/DB?user=…&
// password=…, without TLS, and allowed to fetch the server's RSA key for
// caching_sha2_password's full exchange in plain TCP.
func (mysqlDialect) jdbcURL(dsn, addr string) (string, error) {
	native, err := mysqlDriverDSN(dsn)
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

func (mysqlDialect) says(err error) (string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Message, true
	}
	return "", false
}

func (mysqlDialect) refusedWrite(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
}

// mySession is a MySQL database opened for judging. own holds the thread
// ids of redeliver's own connections, by which its lock waits are found
// (nil where the DSN could not be read, and none is found); dsn is the
// driver's, which a guardian is given.
type mySession struct {
	server
	own *threadIDs
	dsn string
	// When blocked last asked InnoDB, and what it said (see
	// blockedEvery).
	blockedMu  sync.Mutex
	blockedAt  time.Time
	blockedWas bool
}

// blockedEvery is how often blocked asks InnoDB: its
// information_schema.innodb_trx is a cache refreshed only when it was
// not read for 100 ms, so asking more often would keep it stale for ever.
const blockedEvery = 150 * time.Millisecond

func (s *mySession) quote(name string) string   { return "`" + name + "`" }
func (s *mySession) keyWhere(col string) string { return " WHERE " + s.quote(col) + " = ?" }
func (s *mySession) keyQuery(q string) string {
	return "SELECT * FROM (" + q + "\n) q WHERE q.`key` = ?"
}
func (s *mySession) watchesLocks() bool  { return s.own != nil }
func (s *mySession) guardianDSN() string { return s.dsn }

// mysqlLockWaits are the two ways a MySQL server says which transaction
// waits for which, each giving, for a waiting thread among redeliver's
// own (the IN list, filled in), the blocking thread's id, user, host,
// command and query: MariaDB (and MySQL before 8) answer
// information_schema.innodb_lock_waits; MySQL 8 dropped it for
// performance_schema.data_lock_waits, whose thread ids are
// performance_schema's own, mapped to the processlist's by
// performance_schema.threads.
var mysqlLockWaits = [2]string{
	`SELECT b.trx_mysql_thread_id, coalesce(p.user, ''), coalesce(p.host, ''), coalesce(p.command, ''), coalesce(p.info, b.trx_query, '')
		FROM information_schema.innodb_lock_waits w
		JOIN information_schema.innodb_trx r ON r.trx_id = w.requesting_trx_id
		JOIN information_schema.innodb_trx b ON b.trx_id = w.blocking_trx_id
		LEFT JOIN information_schema.processlist p ON p.id = b.trx_mysql_thread_id
		WHERE r.trx_mysql_thread_id IN (%s) AND r.trx_mysql_thread_id <> CONNECTION_ID()
		ORDER BY b.trx_started LIMIT 1`,
	`SELECT bt.processlist_id, coalesce(bt.processlist_user, ''), coalesce(bt.processlist_host, ''), coalesce(bt.processlist_command, ''), coalesce(bt.processlist_info, '')
		FROM performance_schema.data_lock_waits w
		JOIN performance_schema.threads rt ON rt.thread_id = w.requesting_thread_id
		JOIN performance_schema.threads bt ON bt.thread_id = w.blocking_thread_id
		WHERE rt.processlist_id IN (%s) AND rt.processlist_id <> CONNECTION_ID() AND bt.processlist_id IS NOT NULL
		ORDER BY bt.processlist_id LIMIT 1`,
}

// lockHolder is asked of the server's own account of its lock waits, in
// whichever of mysqlLockWaits it answers (the first that does is kept).
func (s *mySession) lockHolder(ctx context.Context) (string, string, error) {
	ids := s.own.list()
	if len(ids) == 0 {
		return "", "", nil
	}
	var id int64
	var user, host, command, query string
	var err error
	for i := int(s.own.asked.Load()); i < len(mysqlLockWaits); i++ {
		err = s.db.QueryRowContext(ctx, fmt.Sprintf(mysqlLockWaits[i], ids)).Scan(&id, &user, &host, &command, &query)
		if !unknownTable(err) {
			s.own.asked.Store(int32(i))
			break
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	doing := "idle in a transaction"
	if command != "Sleep" && query != "" {
		doing = "running " + strconv.Quote(escape.Input(clip(query)))
	}
	return fmt.Sprintf("thread %d (user %s, %s)", id, strconv.Quote(escape.Input(user+"@"+host)), doing),
		fmt.Sprintf("KILL %d", id), nil
}

// unknownTable reports whether a server has no such table (1109: an
// unknown information_schema table; 1146: no such table).
func unknownTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1109 || me.Number == 1146)
}

// blocked asks InnoDB's own view, which MySQL 8 and MariaDB both give.
func (s *mySession) blocked(ctx context.Context, pids []int32) (bool, error) {
	s.blockedMu.Lock()
	defer s.blockedMu.Unlock()
	if time.Since(s.blockedAt) < blockedEvery {
		return s.blockedWas, nil
	}
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.innodb_trx WHERE trx_mysql_thread_id IN ("+idList(pids)+") AND trx_state = 'LOCK WAIT'").Scan(&n)
	s.blockedAt, s.blockedWas = time.Now(), n > 0 && err == nil
	return n > 0, err
}

// busy: a thread is busy running a command, or idle with a transaction
// open (InnoDB's).
func (s *mySession) busy(ctx context.Context, pids []int32) ([]int32, error) {
	list := idList(pids)
	return scanIDs(s.db.QueryContext(ctx, "SELECT id FROM information_schema.processlist WHERE id IN ("+list+") AND (command <> 'Sleep' OR id IN (SELECT trx_mysql_thread_id FROM information_schema.innodb_trx WHERE trx_mysql_thread_id IN ("+list+")))"))
}

// terminate sends KILL QUERY to every thread first: killed one at a
// time, a thread waiting on another's lock would be let go when the
// holder died and run its statement to its commit, after the kill. Then
// KILL CONNECTION: the server rolls back each thread's transaction and
// ends it. One already gone is no error.
func (s *mySession) terminate(ctx context.Context, pids []int32) error {
	for _, kill := range []string{"KILL QUERY ", "KILL CONNECTION "} {
		for _, pid := range pids {
			if _, err := s.db.ExecContext(ctx, kill+strconv.Itoa(int(pid))); err != nil && !unknownThread(err) {
				return err
			}
		}
	}
	return nil
}

// unknownThread reports whether a KILL found no such thread (1094).
func unknownThread(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1094
}

func (s *mySession) serverVersion(context.Context) (int, error) { return 0, nil }
