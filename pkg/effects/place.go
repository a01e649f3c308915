package effects

// Where a database connection string leads — the hosts a driver would
// dial, resolved the way the driver resolves them — and whether that is a
// database the user plainly meant to empty: this machine, or a service
// container named with one label. Nothing here connects.

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redeliver/redeliver/pkg/redact"
)

// Kinds of database.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
	SQLite   = "sqlite"
)

// Place is where a connection string leads, without its user or password.
type Place struct {
	Kind string
	// Hosts are the addresses a driver would try, each HOST:PORT or a
	// unix socket's directory or path; none for SQLite.
	Hosts []string
	// Name is the database's name, or the SQLite file.
	Name string
}

// KindOf is the kind of database a connection string names: a
// postgres:// URL or a libpq keyword string (host=… dbname=…) is
// PostgreSQL, a mysql:// URL or a Go MySQL DSN (user:pw@tcp(host)/db)
// is MySQL, anything else a SQLite file.
func KindOf(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"), pgKeywords.MatchString(dsn):
		return Postgres
	case strings.HasPrefix(dsn, "mysql://"), NativeMySQL(dsn):
		return MySQL
	}
	return SQLite
}

// pgKeywords is a libpq keyword/value connection string: it starts with
// one of the keywords a PostgreSQL connection is made of.
var pgKeywords = regexp.MustCompile(`^\s*(host|hostaddr|port|dbname|user|password|service|sslmode|connect_timeout)\s*=`)

// nativeMySQL is a Go MySQL driver DSN: [user[:password]@]net(addr)/db.
var nativeMySQL = regexp.MustCompile(`^([^/]*@)?(tcp|tcp4|tcp6|unix)\([^)]*\)/`)

// NativeMySQL reports whether dsn is written the Go MySQL driver's way
// (root:pw@tcp(127.0.0.1:3306)/test) rather than as a mysql:// URL.
func NativeMySQL(dsn string) bool { return nativeMySQL.MatchString(dsn) }

// Parse resolves a connection string: postgres://… as pgx resolves it
// (PGHOST and the other PG* variables fill in what the URL leaves out,
// several hosts are all tried), mysql://… as the MySQL driver dials it
// (no host is 127.0.0.1:3306), anything else a SQLite file. Its errors
// never show a password the string may hold.
func Parse(dsn string) (*Place, error) {
	switch KindOf(dsn) {
	case Postgres:
		cfg, err := pgconn.ParseConfig(dsn)
		if err != nil {
			// pgx's message names what it could not use (a port, a CA
			// file, a service) and quotes the string with its password
			// masked; masked again here, as every string shown is.
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
	case MySQL:
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
	return &Place{Kind: SQLite, Name: strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")}, nil
}

// KindName is PostgreSQL, MySQL or SQLite.
func KindName(kind string) string {
	switch kind {
	case Postgres:
		return "PostgreSQL"
	case MySQL:
		return "MySQL"
	}
	return "SQLite"
}

// String names the place in words: "PostgreSQL 127.0.0.1:5432/test",
// "MySQL db:3306/shop", "SQLite file effects.db".
func (p *Place) String() string {
	if p.Kind == SQLite {
		return "SQLite file " + p.Name
	}
	return KindName(p.Kind) + " " + p.Address()
}

// Address is the hosts and the database name: "127.0.0.1:5432/test".
func (p *Place) Address() string {
	if p.Kind == SQLite {
		return p.Name
	}
	return strings.Join(p.Hosts, ",") + "/" + p.Name
}

// Host is the host part of an address: the name or IP without the
// port, or a unix socket's path as it is.
func Host(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return addr
	}
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Local reports whether a host is one a reset plainly meant: a unix
// socket, a loopback address, localhost, or a name of one label (such
// as postgres or db, as CI service containers and compose services are
// named; see serviceName). An empty host dials this machine.
func Local(host string) bool {
	switch {
	case host == "", strings.HasPrefix(host, "/"), strings.HasPrefix(host, "@"):
		return true
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	addr, _, zoned := strings.Cut(h, "%") // an IPv6 zone: fe80::1%eth0
	if ip := net.ParseIP(addr); ip != nil {
		return ip.IsLoopback()
	}
	if zoned {
		return false
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	return serviceName(h)
}

// serviceName reports whether h is a host name of one label, as a CI
// service container or a compose service is named: letters, digits, "-"
// and "_", starting with a letter or "_". A label that starts with a
// digit may be an IPv4 address to libc's resolver (167772165 and
// 0x0a000005 are 10.0.0.5), and anything else is no name.
func serviceName(h string) bool {
	if h == "" || !(h[0] >= 'a' && h[0] <= 'z' || h[0] == '_') {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Foreign is the first host of the place that is neither Local nor in
// allowed (host names, matched without case; a HOST:PORT entry matches
// its host), or "" when every host is one of them.
func (p *Place) Foreign(allowed []string) string {
	for _, a := range p.Hosts {
		h := Host(a)
		if Local(h) || contains(allowed, h) {
			continue
		}
		return h
	}
	return ""
}

func contains(allowed []string, host string) bool {
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if strings.EqualFold(Host(a), host) || strings.EqualFold(strings.Trim(a, "[]"), host) {
			return true
		}
	}
	return false
}
