package effects

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocal(t *testing.T) {
	for _, c := range []struct {
		host  string
		local bool
	}{
		{"127.0.0.1", true},
		{"127.0.0.53", true},
		{"::1", true},
		{"localhost", true},
		{"LOCALHOST", true},
		{"app.localhost", true},
		{"/var/run/postgresql", true},
		{"/tmp/.s.PGSQL.5432", true},
		{"", true},
		{"postgres", true},
		{"db", true},
		{"mysql", true},
		{"db.example.com", false},
		{"postgres.internal", false},
		{"10.0.0.5", false},
		{"192.168.1.20", false},
		{"0.0.0.0", false},
		{"fe80::1", false},
		{"2001:db8::5", false},
		// One label, but an address: libc's resolver (Go's on macOS, or
		// with cgo) reads a number as IPv4, and a zone does not make an
		// IPv6 address local.
		{"167772165", false},
		{"2130706433", false},
		{"0x0a000005", false},
		{"012", false},
		{"2001:db8::5%eth0", false},
		{"fe80::1%eth0", false},
		{"::1%lo", true},
		{"pg_1", true},
		{"my-db", true},
		{"db1", true},
	} {
		if got := Local(c.host); got != c.local {
			t.Errorf("Local(%q) = %v, want %v", c.host, got, c.local)
		}
	}
}

func TestForeign(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE", "PGSERVICEFILE", "PGPASSFILE"} {
		t.Setenv(v, "")
	}
	for _, c := range []struct {
		name    string
		env     map[string]string
		dsn     string
		allowed []string
		foreign string // "" when the reset may run
		where   string
	}{
		{name: "loopback v4", dsn: "postgres://postgres@127.0.0.1:5432/test", where: "PostgreSQL 127.0.0.1:5432/test"},
		{name: "loopback v6", dsn: "postgres://postgres@[::1]:5432/test", where: "PostgreSQL [::1]:5432/test"},
		{name: "localhost", dsn: "postgresql://u:pw@localhost/test", where: "PostgreSQL localhost:5432/test"},
		{name: "unix socket", dsn: "postgres://postgres@/test?host=/var/run/postgresql", where: "PostgreSQL /var/run/postgresql/test"},
		{name: "CI service postgres", dsn: "postgres://postgres:postgres@postgres:5432/test", where: "PostgreSQL postgres:5432/test"},
		{name: "compose service db", dsn: "mysql://root:pw@db/shop", where: "MySQL db:3306/shop"},
		{name: "mysql without host", dsn: "mysql://root@/test", where: "MySQL 127.0.0.1:3306/test"},
		{name: "remote name", dsn: "postgres://app:s3cret@db.example.com:5432/prod", foreign: "db.example.com", where: "PostgreSQL db.example.com:5432/prod"},
		{name: "private IP", dsn: "postgres://app@10.0.0.5/prod", foreign: "10.0.0.5", where: "PostgreSQL 10.0.0.5:5432/prod"},
		{name: "remote mysql", dsn: "mysql://root:s3cret@db.example.com:3307/prod", foreign: "db.example.com", where: "MySQL db.example.com:3307/prod"},
		{name: "PGHOST fills in the host", env: map[string]string{"PGHOST": "db.example.com"}, dsn: "postgres:///prod", foreign: "db.example.com", where: "PostgreSQL db.example.com:5432/prod"},
		{name: "one of several hosts", dsn: "postgres://app@127.0.0.1:5432,db.example.com:5432/prod", foreign: "db.example.com", where: "PostgreSQL 127.0.0.1:5432,db.example.com:5432/prod"},
		{name: "allowed by name", dsn: "postgres://app:s3cret@db.example.com:5432/ci", allowed: []string{"DB.example.com"}, where: "PostgreSQL db.example.com:5432/ci"},
		{name: "allowed as host:port", dsn: "postgres://app@10.0.0.5:6432/ci", allowed: []string{"10.0.0.5:6432"}, where: "PostgreSQL 10.0.0.5:6432/ci"},
		{name: "another host allowed", dsn: "postgres://app@10.0.0.5/ci", allowed: []string{"10.0.0.6"}, foreign: "10.0.0.5", where: "PostgreSQL 10.0.0.5:5432/ci"},
		{name: "keyword string", dsn: "host=127.0.0.1 port=5432 dbname=test user=postgres password=s3cret", where: "PostgreSQL 127.0.0.1:5432/test"},
		{name: "remote keyword string", dsn: "host=db.example.com dbname=prod user=app password=s3cret", foreign: "db.example.com", where: "PostgreSQL db.example.com:5432/prod"},
		{name: "Go MySQL DSN", dsn: "root:s3cret@tcp(127.0.0.1:3306)/test", where: "MySQL 127.0.0.1:3306/test"},
		{name: "remote Go MySQL DSN", dsn: "root:s3cret@tcp(db.example.com:3306)/prod?parseTime=true", foreign: "db.example.com", where: "MySQL db.example.com:3306/prod"},
		{name: "Go MySQL DSN on a socket", dsn: "root@unix(/run/mysqld/mysqld.sock)/test", where: "MySQL /run/mysqld/mysqld.sock/test"},
		{name: "SQLite file", dsn: "effects.db", where: "SQLite file effects.db"},
		{name: "SQLite file with = in its name", dsn: "runs/a=b.db", where: "SQLite file runs/a=b.db"},
		{name: "SQLite URL", dsn: "sqlite:/srv/data/effects.db", where: "SQLite file /srv/data/effects.db"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p, err := Parse(c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Foreign(c.allowed); got != c.foreign {
				t.Errorf("Foreign(%q) = %q, want %q", c.allowed, got, c.foreign)
			}
			if got := p.String(); got != c.where {
				t.Errorf("String() = %q, want %q", got, c.where)
			}
			for _, secret := range []string{"s3cret", "pw", "app", "root"} {
				if strings.Contains(p.String(), secret) {
					t.Errorf("String() = %q names the user or password", p.String())
				}
			}
		})
	}
}

// TestServiceFile: a service named in the URL or PGSERVICE leads where
// its service file says, as it does for pgx.
func TestServiceFile(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGDATABASE", "PGSERVICE"} {
		t.Setenv(v, "")
	}
	file := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(file, []byte("[prod]\nhost=db.example.com\nport=6432\ndbname=orders\n\n[ci]\nhost=postgres\ndbname=test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGSERVICEFILE", file)
	for _, c := range []struct{ env, dsn, foreign, where string }{
		{"", "postgres:///?service=prod", "db.example.com", "PostgreSQL db.example.com:6432/orders"},
		{"prod", "postgres://", "db.example.com", "PostgreSQL db.example.com:6432/orders"},
		{"", "postgres:///?service=ci", "", "PostgreSQL postgres:5432/test"},
	} {
		t.Setenv("PGSERVICE", c.env)
		p, err := Parse(c.dsn)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.dsn, err)
		}
		if got := p.Foreign(nil); got != c.foreign || p.String() != c.where {
			t.Errorf("Parse(%q) with PGSERVICE=%q: foreign %q, %s; want %q, %s", c.dsn, c.env, got, p, c.foreign, c.where)
		}
	}
}

func TestParseErrorHidesTheString(t *testing.T) {
	for _, dsn := range []string{
		"postgres://app:s3cret@db.example.com:notaport/prod",
		"postgres://app:s3cret@db.example.com/prod?port=abc",
		"postgres://app:s3cret@db.example.com/prod?sslmode=verify-full&sslrootcert=/nonexistent/root.crt&sslpassword=s3cret",
		"mysql://app:s3cret@db.example.com:bad/prod",
	} {
		_, err := Parse(dsn)
		if err == nil {
			t.Fatalf("Parse(%q) accepted a malformed URL", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse error %q repeats the password", err)
		}
		if strings.Contains(dsn, "sslrootcert") && !strings.Contains(err.Error(), "/nonexistent/root.crt") {
			t.Errorf("Parse error %q does not name the CA file it could not read", err)
		}
	}
}
