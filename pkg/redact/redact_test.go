package redact

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"postgres URL", "postgres://postgres:s3cretPW@127.0.0.1:5432/test", "postgres://postgres:xxxxx@127.0.0.1:5432/test"},
		{"amqp URL", "amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:xxxxx@127.0.0.1:5672/"},
		{"http URL", "POST http://alice:s3cret@127.0.0.1:8080/events (structured)", "POST http://alice:xxxxx@127.0.0.1:8080/events (structured)"},
		{"a user without a password", "postgres://postgres@127.0.0.1:5432/test", "postgres://postgres@127.0.0.1:5432/test"},
		{"no userinfo", "http://127.0.0.1:8080/events?a=b", "http://127.0.0.1:8080/events?a=b"},
		// A password may hold a /, so an @ in the path after a port is
		// taken for the end of a password: hiding too much is safe.
		{"an @ in the path", "http://127.0.0.1:8080/users/a@b", "http://127.0.0.1:xxxxx@b"},
		{"an @ in the path, no port", "http://127.0.0.1/users/a@b", "http://127.0.0.1/users/a@b"},
		{"an @ in the query", "http://u:pw@h/p?mail=a@b", "http://u:xxxxx@h/p?mail=a@b"},
		{"an @ in the password", "postgres://u:p@ss@h/db", "postgres://u:xxxxx@h/db"},
		{"a / in the password", "postgres://u:p/w@h/db", "postgres://u:xxxxx@h/db"},
		{"a # in the password", "postgres://u:p#w@h/db", "postgres://u:xxxxx@h/db"},
		{"a ' in the password", "postgres://u:it's@h/db", "postgres://u:xxxxx@h/db"},
		{"NATS token", "nats://s3cretTOKEN@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"NATS user and password", "nats://u:pw@127.0.0.1:4222", "nats://u:xxxxx@127.0.0.1:4222"},
		{"two URLs", "from amqp://a:one@h1/ to postgres://b:two@h2/db", "from amqp://a:xxxxx@h1/ to postgres://b:xxxxx@h2/db"},
		{"a quoted URL", `parse "postgres://u:pw@host:badport/db": invalid port ":badport" after host`, `parse "postgres://u:xxxxx@host:badport/db": invalid port ":badport" after host`},
		{"an escaped quote in the password", `"postgres://u:p\"w@h/db"`, `"postgres://u:xxxxx@h/db"`},
		{"query password", "postgres://h/db?sslmode=disable&password=s3cret&x=1", "postgres://h/db?sslmode=disable&password=xxxxx&x=1"},
		{"query sslpassword", "postgres://h/db?sslpassword=s3cret", "postgres://h/db?sslpassword=xxxxx"},
		{"query token", "http://h/hook?token=s3cret#frag", "http://h/hook?token=xxxxx#frag"},
		{"query api_key", "http://h/hook?api_key=s3cret", "http://h/hook?api_key=xxxxx"},
		{"keyword DSN", "host=127.0.0.1 user=postgres password=s3cret dbname=test", "host=127.0.0.1 user=postgres password=xxxxx dbname=test"},
		{"keyword DSN, quoted", "host=h password='s3 cret\\'s' dbname=test", "host=h password=xxxxx dbname=test"},
		{"keyword DSN, quoted, then more", "password=''0 next", "password=xxxxx next"},
		{"keyword DSN, quoted, unclosed", "password='s3 cret", "password=xxxxx"},
		{"keyword DSN in %q", `"host=h password=s3cret"`, `"host=h password=xxxxx"`},
		{"go-mysql DSN", "root:s3cret@tcp(127.0.0.1:3306)/test", "root:xxxxx@tcp(127.0.0.1:3306)/test"},
		{"go-mysql DSN, unix", "SQLite file root:s3cret@unix(/run/mysqld.sock)/test", "SQLite file root:xxxxx@unix(/run/mysqld.sock)/test"},
		{"go-mysql DSN, default address", "root:s3cret@/test", "root:xxxxx@/test"},
		{"go-mysql DSN, an @ in the password", "root:p@ss@tcp(h:3306)/test", "root:xxxxx@tcp(h:3306)/test"},
		{"go-mysql DSN, an address in the password", "u:@(0@tcp(h:3306)/test", "u:xxxxx@tcp(h:3306)/test"},
		{"go-mysql DSN without a password", "root@tcp(127.0.0.1:3306)/test", "root@tcp(127.0.0.1:3306)/test"},
		{"flag with a value", "consumer --db-password s3cret --listen :8080", "consumer --db-password xxxxx --listen :8080"},
		{"flag=value", "consumer --token=s3cret -api-key=s3cret2", "consumer --token=xxxxx -api-key=xxxxx"},
		{"env assignment", "env PGPASSWORD=s3cret STRIPE_KEY=sk_live_1 consumer", "env PGPASSWORD=xxxxx STRIPE_KEY=xxxxx consumer"},
		{"bearer", "Authorization: Bearer eyJhbGciOi.x.y", "Authorization: Bearer xxxxx"},
		{"basic", "Authorization: Basic dXNlcjpwdw==", "Authorization: Basic xxxxx"},
		{"basic in a sentence", "a basic check", "a basic check"},
		{"basic before a flag", "consumer --auth-mode basic --port 8080", "consumer --auth-mode basic --port 8080"},
		{"flags that hold no secret", "consumer --listen 127.0.0.1:8080 --routing-key orders --key order_id", "consumer --listen 127.0.0.1:8080 --routing-key orders --key order_id"},
		{"names that hold no secret", "key=O-1 idempotency_key=k routing_key=r bypass=3 auth-mode=none PWD=/tmp", "key=O-1 idempotency_key=k routing_key=r bypass=3 auth-mode=none PWD=/tmp"},
		{"short password flags", "consumer --pass s3cret1 --pw=s3cret2 --basic-auth=u:s3cret3 --auth u:s3cret4", "consumer --pass xxxxx --pw=xxxxx --basic-auth=xxxxx --auth xxxxx"},
		{"nothing secret", "table payments (key order_id) in SQLite file /tmp/x.db", "table payments (key order_id) in SQLite file /tmp/x.db"},
		{"already masked", "postgres://u:xxxxx@h/db password=xxxxx root:xxxxx@tcp(h)/d", "postgres://u:xxxxx@h/db password=xxxxx root:xxxxx@tcp(h)/d"},
		{"JSON", `{"target": "postgres://u:s3cret@h/db?password=s3\"x"}`, `{"target": "postgres://u:xxxxx@h/db?password=xxxxx"}`},
		{"XML", `<property name="db" value="host=h password=s3cret"></property>`, `<property name="db" value="host=h password=xxxxx"></property>`},
		{"masked, then punctuation", "started as c --api-key xxxxx; effects: password=xxxxx, next", "started as c --api-key xxxxx; effects: password=xxxxx, next"},
		{"a hint's placeholder", "write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE, or password=PASSWORD", "write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE, or password=PASSWORD"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := String(tt.in); got != tt.want {
				t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want string
	}{
		{"a URL argument", []string{"consumer", "--db", "postgres://postgres:s3cretPW@127.0.0.1/test"}, "consumer --db postgres://postgres:xxxxx@127.0.0.1/test"},
		{"a secret flag's value with a space", []string{"consumer", "--password", "two words", "--listen", ":8080"}, "consumer --password xxxxx --listen :8080"},
		{"a secret flag's value that looks like a flag", []string{"consumer", "-token", "-x-", "--listen", ":8080"}, "consumer -token xxxxx --listen :8080"},
		{"flag=value with a space", []string{"consumer", "--api-key=a b"}, "consumer --api-key=xxxxx"},
		{"a keyword DSN argument", []string{"consumer", "host=h password=s3cret"}, "consumer host=h password=xxxxx"},
		{"nothing secret", []string{"consumer", "--listen", "127.0.0.1:8080", "--db", "/tmp/p.db"}, "consumer --listen 127.0.0.1:8080 --db /tmp/p.db"},
		{"a secret flag last", []string{"consumer", "--secret"}, "consumer --secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Args(tt.in); got != tt.want {
				t.Errorf("Args(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestError(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string
	}{
		{"a bad port", "postgres://u:s3cret@host:badport/db", `parse "postgres://u:xxxxx@host:badport/db": invalid port after host`},
		{"a # in the password", "postgres://u:s3#cret@host/db", `parse "postgres://u:xxxxx": invalid port after host`},
		{"a bad port without a password", "postgres://host:badport/db", `parse "postgres://host:xxxxx/db": invalid port after host`},
		{"a bad escape in the password", "postgres://u:s3%zzcret@host/db", `parse "postgres://u:xxxxx@host/db": invalid URL escape`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, perr := url.Parse(tt.url)
			if perr == nil {
				t.Fatalf("url.Parse(%q) succeeded; the test needs it to fail", tt.url)
			}
			err := Error(fmt.Errorf("the effects db: %w", perr))
			if got := err.Error(); got != "the effects db: "+tt.want {
				t.Errorf("Error(%v)\n got %q\nwant %q", perr, got, "the effects db: "+tt.want)
			}
			var ue *url.Error
			if !errors.As(err, &ue) {
				t.Errorf("Error(%v) lost its cause", perr)
			}
		})
	}
	plain := errors.New("no secret here")
	if got := Error(plain); got != plain {
		t.Errorf("Error(%v) = %v, want the error itself", plain, got)
	}
	if Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"PGPASSWORD": true, "password": true, "sslpassword": true, "DB_PASSWD": true, "WEBHOOK_SECRET": true,
		"token": true, "GITHUB_TOKEN": true, "api-key": true, "STRIPE_KEY": true, "AWS_SECRET_ACCESS_KEY": true,
		"apikey": true, "DB_PASS": true, "MYSQL_PWD": true, "credentials": true,
		"key": false, "KEY": false, "ROUTING_KEY": false, "idempotency-key": false, "sslkey": false,
		"pass": true, "PASS": true, "pw": true, "auth": true, "basic-auth": true, "HTTP_AUTH": true, "proxy.auth": true,
		"PWD": false, "user": false, "host": false, "PATH": false, "": false, "auth-mode": false, "AUTH_TYPE": false, "oauth2-issuer": false, "bypass": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestGoldensUnchanged: the reports redeliver prints hold no secret, and
// redacting them must not change a byte (no word of a report is taken
// for one).
func TestGoldensUnchanged(t *testing.T) {
	files, err := filepath.Glob("../../testdata/golden/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	more, _ := filepath.Glob("../../cmd/testdata/*/*")
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		if got := String(s); got != s {
			t.Errorf("%s changes when redacted:\n%s", f, firstDiff(s, got))
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("- %s\n+ %s", al[i], bl[i])
		}
	}
	return "(lengths differ)"
}

// FuzzString: any text is redacted without a panic, redacting twice
// changes nothing more, text with no sign of a secret is left alone, and
// a password put in a URL, a keyword DSN, a MySQL DSN or a flag never
// comes out.
func FuzzString(f *testing.F) {
	for _, s := range []string{
		"postgres://postgres:s3cretPW@127.0.0.1:5432/test", "host=h password='a b'", "root:pw@tcp(h:3306)/db",
		"--password x", "--password xxxxx;", "nats://tok@h", "Bearer abc.def", `"a\"b" password=`, "://@", "@(", "-- x", "'",
	} {
		f.Add(s, "s3cr3t!")
	}
	f.Fuzz(func(t *testing.T, s, pw string) {
		once := String(s)
		if twice := String(once); twice != once {
			t.Fatalf("String is not idempotent on %q:\nonce  %q\ntwice %q", s, once, twice)
		}
		lower := strings.ToLower(s)
		if !strings.ContainsAny(s, "@=-") && !strings.Contains(lower, "bearer") && !strings.Contains(lower, "basic") && once != s {
			t.Fatalf("String(%q) = %q, want it unchanged", s, once)
		}
		if len(pw) < 6 || strings.ContainsAny(pw, " \t\n\r\v\f\"'`<>\\") || strings.Contains(Mask, pw) || pw == placeholder {
			return
		}
		u := url.URL{Scheme: "postgres", User: url.UserPassword("u", pw), Host: "db.internal:5432", Path: "/app"}
		shown := []string{
			String(u.String()),
			String("the effects db " + u.String() + " cannot be reached"),
			String("host=db.internal password=" + pw + " dbname=app"),
			String("u:" + pw + "@tcp(db.internal:3306)/app"),
			Args([]string{"consumer", "--password", pw, "--db", u.String()}),
		}
		hidden := url.UserPassword("u", pw).String()[2:]
		for _, out := range shown {
			if strings.Contains(out, pw) || strings.Contains(out, hidden) {
				t.Fatalf("the password %q is in %q", pw, out)
			}
		}
	})
}
