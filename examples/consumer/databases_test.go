package main

import (
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
)

// statementDB is a database a statement test runs on: PostgreSQL, or
// MySQL or MariaDB through redeliver's MySQL proxy. A test table-driven
// over statementDBs runs one body on each, asserting the same verdicts;
// what differs is only how the trace writes the example consumer's
// statements: its BEGIN and COMMIT, and a prepared statement's name.
type statementDB struct {
	name string
	// fresh returns the URL of an empty database of the calling test's
	// own, dropped when it ends. On MySQL it first waits for a MySQL slot
	// (mySlots), held until the test ends: call it before brokerSlot, as
	// a test holding a MySQL slot for all its subtests does.
	fresh func(t testing.TB) string
	// hold waits for what fresh waits for, a MySQL slot, held until the
	// test ends; another then returns the URL of another empty database
	// of the test's own without waiting: a test running several cases
	// side by side on one database holds once and takes one for each (or
	// has each run take a slot of slots, invocation.slot).
	hold    func(t testing.TB)
	another func(t testing.TB) string
	says    *strings.Replacer
	// statements is the example consumer's statement file on it, and
	// dbVar the variable that file reads its effects.db from; exec,
	// provider and target are its exec-statements, statements-provider
	// and target-proxy files.
	statements, dbVar      string
	exec, provider, target string
	// slot bounds the broker cases on it running at once: on PostgreSQL
	// brokerSlot (the server's connections are shared with every other
	// test); on MySQL the MySQL slot fresh took already bounds them.
	slot func(t testing.TB)
	// slots is what slot takes, for a run that is not a test of its own
	// (invocation.slot): brokerSlots on PostgreSQL, mySlots on MySQL.
	slots chan struct{}
}

// brokerSlot waits until a broker case may run on this database, after
// fresh: its instances' connection pools stay within the server's.
func (d statementDB) brokerSlot(t testing.TB) { d.slot(t) }

// text returns s, a line of a PostgreSQL trace, as this database's trace
// writes it: pgx sends "commit" and the server answers COMMIT; the MySQL
// driver sends COMMIT and the server answers OK.
func (d statementDB) text(s string) string { return d.says.Replace(s) }

// re compiles expr, a pattern of a PostgreSQL trace, as this database's
// trace writes it.
func (d statementDB) re(expr string) *regexp.Regexp { return regexp.MustCompile(d.says.Replace(expr)) }

// mySays turns a PostgreSQL trace's COMMIT, and its BEGIN, into a MySQL
// one's: go-sql-driver/mysql sends START TRANSACTION and COMMIT as text,
// and the server answers OK.
var mySays = strings.NewReplacer("commit → COMMIT", "COMMIT → OK", "(commit)", "(COMMIT)", "commit ✂", "COMMIT ✂", "begin → BEGIN", "START TRANSACTION → OK")

// statementDBs returns the databases this machine names:
// REDELIVER_TEST_POSTGRES and REDELIVER_TEST_MYSQL. Under CI=true a
// missing one fails the test; elsewhere it is skipped with a line saying
// how to run it, and the test is skipped when neither is set.
func statementDBs(t *testing.T) []statementDB {
	t.Helper()
	var dbs []statementDB
	if pg := os.Getenv("REDELIVER_TEST_POSTGRES"); pg != "" {
		dbs = append(dbs, statementDB{
			name:       "postgres",
			fresh:      func(t testing.TB) string { return freshSchema(t, pg) },
			hold:       func(testing.TB) {},
			another:    func(t testing.TB) string { return freshSchema(t, pg) },
			says:       strings.NewReplacer(),
			statements: "examples/consumer/statements.yaml",
			dbVar:      "PGDB",
			slot:       brokerSlot,
			slots:      brokerSlots,
			exec:       "examples/consumer/exec-statements.yaml",
			provider:   "examples/consumer/statements-provider.yaml",
			target:     "examples/consumer/target-proxy.yaml",
		})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but REDELIVER_TEST_POSTGRES is not set")
	} else {
		t.Log("PostgreSQL cases skipped: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	if my := os.Getenv("REDELIVER_TEST_MYSQL"); my != "" {
		dbs = append(dbs, statementDB{
			name: "mysql",
			fresh: func(t testing.TB) string {
				mySlot(t)
				return myDatabase(t, my, "redeliver_my_"+suffix())
			},
			hold:       mySlot,
			another:    func(t testing.TB) string { return myDatabase(t, my, "redeliver_my_"+suffix()) },
			says:       mySays,
			statements: "examples/consumer/statements-mysql.yaml",
			dbVar:      "MYDB",
			slot:       func(testing.TB) {},
			slots:      mySlots,
			exec:       "examples/consumer/exec-statements-mysql.yaml",
			provider:   "examples/consumer/statements-provider-mysql.yaml",
			target:     "examples/consumer/target-proxy-mysql.yaml",
		})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but REDELIVER_TEST_MYSQL is not set")
	} else {
		t.Log("MySQL cases skipped: set REDELIVER_TEST_MYSQL=mysql://root@127.0.0.1:3306/test")
	}
	if len(dbs) == 0 {
		t.Skip("statement cases need PostgreSQL or MySQL: set REDELIVER_TEST_POSTGRES or REDELIVER_TEST_MYSQL")
	}
	return dbs
}

// TestStatementDBsTranslateTheTrace: a PostgreSQL trace's COMMIT is
// written as MySQL's; nothing else changes.
func TestStatementDBsTranslateTheTrace(t *testing.T) {
	my := statementDB{says: mySays}
	for _, tt := range []struct{ pg, want string }{
		{"6. commit → COMMIT ✂ killed here", "6. COMMIT → OK ✂ killed here"},
		{"first in schedule 11 (killed after statement 5 (commit))", "first in schedule 11 (killed after statement 5 (COMMIT))"},
		{"    6. commit ✂ killed here, before it reached the database", "    6. COMMIT ✂ killed here, before it reached the database"},
		{"    3. begin → BEGIN", "    3. START TRANSACTION → OK"},
		{"invariant duplicate-effect broken: key O-30 has ", "invariant duplicate-effect broken: key O-30 has "},
	} {
		if got := my.text(tt.pg); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.pg, got, tt.want)
		}
	}
	if !my.re(`^    instance [12]: 6\. commit → COMMIT ✂`).MatchString("    instance 2: 6. COMMIT → OK ✂") {
		t.Error("re does not translate a pattern")
	}
}

// myDSN is the MySQL or MariaDB server the MySQL twins of the statement
// tests run against (REDELIVER_TEST_MYSQL, a mysql:// URL).
// Called by a test after t.Parallel: it waits for a slot (mySlots).
func myDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_MYSQL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but REDELIVER_TEST_MYSQL is not set")
		}
		t.Skip("the MySQL statement tests need MySQL or MariaDB: set REDELIVER_TEST_MYSQL=mysql://root@127.0.0.1:3306/test")
	}
	mySlot(t)
	return dsn
}

// mySlot waits for a MySQL slot, held until the test ends.
func mySlot(t testing.TB) {
	mySlots <- struct{}{}
	t.Cleanup(func() { <-mySlots })
}

// mySlots: at most three MySQL tests at once, each holding its slot
// until it ends. Each runs several redeliver runs side by side; all of
// them at once, beside the rest of the package, loaded a 2-core machine
// until a safe consumer's run went wrong. At two, the MySQL tests were
// the package's long pole (their slot held 640 s in a 335 s run).
var mySlots = make(chan struct{}, 3)

// myDatabase creates a database of the test's own on the server dsn
// names, empty, and returns dsn naming it; it is dropped at the end.
func myDatabase(t testing.TB, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysqlConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	for _, q := range []string{"DROP DATABASE IF EXISTS " + name, "CREATE DATABASE " + name} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if db := sql.OpenDB(c); db != nil {
			db.Exec("DROP DATABASE IF EXISTS " + name)
			db.Close()
		}
	})
	u.Path = "/" + name
	return u.String()
}

// rewrite returns src with each old replaced by its new, failing the test
// where one is not there (the file changed under the test).
func rewrite(t *testing.T, name, src string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("%s changed: %q is not where this test looks", name, pairs[i])
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeTemp(t *testing.T, name, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
