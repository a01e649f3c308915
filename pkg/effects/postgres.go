package effects

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/rawio"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// postgresDialect is PostgreSQL, through pgx.
type postgresDialect struct{}

func (postgresDialect) kind() string { return Postgres }
func (postgresDialect) name() string { return "PostgreSQL" }

// pgKeywords is a libpq keyword/value connection string: it starts with
// one of the keywords a PostgreSQL connection is made of.
var pgKeywords = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|service|sslmode|connect_timeout)\s*=`)

func (postgresDialect) names(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") || pgKeywords.MatchString(dsn)
}

func (postgresDialect) place(dsn string) (*Place, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		// pgx's message names what it could not use (a port, a CA file,
		// a service) and quotes the string with its password masked;
		// masked again here, as every string shown is.
		return nil, fmt.Errorf("not a PostgreSQL URL pgx can use: %v", redact.Error(err))
	}
	p := &Place{Kind: Postgres, Name: cfg.Database}
	add := func(host string, port uint16) {
		a := host
		if !strings.HasPrefix(host, "/") {
			a = net.JoinHostPort(host, strconv.Itoa(int(port)))
		}
		for _, h := range p.Hosts {
			if h == a {
				return
			}
		}
		p.Hosts = append(p.Hosts, a)
	}
	add(cfg.Host, cfg.Port)
	for _, f := range cfg.Fallbacks {
		add(f.Host, f.Port)
	}
	return p, nil
}

func (postgresDialect) open(dsn string, _ *Place, _ *scenario.Effects) (session, error) {
	db, app, err := openPostgres(dsn)
	if err != nil {
		return nil, err
	}
	return &pgSession{server: server{db}, app: app}, nil
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

func (postgresDialect) checkProxy(e *scenario.Effects, p *Place) *problem.Error {
	if len(p.Hosts) == 0 || strings.HasPrefix(p.Hosts[0], "/") {
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

func (postgresDialect) proxyURL(dsn, host, port string) (string, error) {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Host = net.JoinHostPort(host, port)
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

// jdbcURL is PgJDBC's: jdbc:postgresql://127.0.0.1:PORT/DB?user=…&
// password=…&sslmode=disable, with currentSchema set to the search_path
// dsn gives (as a URL parameter pgx reads, or in options=-csearch_path=…,
// as libpq reads it).
func (postgresDialect) jdbcURL(dsn, addr string) (string, error) {
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

func (postgresDialect) says(error) (string, bool) { return "", false }

func (postgresDialect) refusedWrite(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "25006" // read_only_sql_transaction
}

// pgSession is a PostgreSQL database opened for judging. app is the
// application_name of redeliver's own connections, by which a reset or
// a read that waits on a lock is found ("" where the URL could not be
// read, and none is found).
type pgSession struct {
	server
	app string
}

func (s *pgSession) quote(name string) string   { return `"` + name + `"` }
func (s *pgSession) keyWhere(col string) string { return " WHERE " + s.quote(col) + "::text = $1" }
func (s *pgSession) keyQuery(q string) string {
	return "SELECT * FROM (" + q + "\n) q WHERE q.key::text = $1"
}
func (s *pgSession) watchesLocks() bool  { return s.app != "" }
func (s *pgSession) guardianDSN() string { return "" }

func (s *pgSession) lockHolder(ctx context.Context) (string, string, error) {
	var pid int32
	var app, state, query string
	err := s.db.QueryRowContext(ctx, `SELECT b.pid, coalesce(b.application_name, ''), coalesce(b.state, ''), coalesce(b.query, '')
		FROM pg_stat_activity w
		CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS k(pid)
		JOIN pg_stat_activity b ON b.pid = k.pid
		WHERE w.application_name = $1 AND w.pid <> pg_backend_pid() AND w.wait_event_type = 'Lock'
		ORDER BY b.backend_start LIMIT 1`, s.app).Scan(&pid, &app, &state, &query)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	verb := "running"
	if state != "active" {
		verb = "whose last query was"
	}
	if state == "" {
		state = "state unknown"
	}
	return fmt.Sprintf("backend %d (application %s, %s, %s %s)", pid, strconv.Quote(escape.Input(app)), state, verb, strconv.Quote(escape.Input(clip(query)))),
		fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid), nil
}

func (s *pgSession) blocked(ctx context.Context, pids []int32) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid IN ("+idList(pids)+") AND wait_event_type = 'Lock'").Scan(&n)
	return n > 0, err
}

func (s *pgSession) busy(ctx context.Context, pids []int32) ([]int32, error) {
	return scanIDs(s.db.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE pid = ANY($1) AND state IS DISTINCT FROM 'idle'", pids))
}

// terminate ends the server processes with pg_terminate_backend, which a
// role may run on its own processes.
func (s *pgSession) terminate(ctx context.Context, pids []int32) error {
	_, err := s.db.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS t(pid)", pids)
	return err
}

func (s *pgSession) serverVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v)
	return v, err
}
