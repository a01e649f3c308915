package external

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	mysql "github.com/redeliver/redeliver/pkg/_mysqldriver"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// testDB is a database the statement tests of this package run on:
// PostgreSQL, or MySQL or MariaDB through the MySQL proxy. A test
// table-driven over testDBs runs one body on each; what differs is here.
type testDB struct {
	name string
	// dsn is the effects db: a postgres:// URL, or a Go MySQL DSN (the
	// form ${REDELIVER_DB_URL} then takes too).
	dsn   string
	admin *sql.DB
	// text is the column type of a short key.
	text string
}

// testDBs returns the databases this machine names: REDELIVER_TEST_POSTGRES
// and REDELIVER_TEST_MYSQL. Under CI=true a missing one fails the test;
// elsewhere its case is skipped with a line saying how to run it.
func testDBs(t *testing.T) []testDB {
	t.Helper()
	var dbs []testDB
	if pg := os.Getenv("REDELIVER_TEST_POSTGRES"); pg != "" {
		dbs = append(dbs, testDB{name: "postgres", dsn: pg, text: "text"})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("REDELIVER_TEST_POSTGRES is not set under CI=true")
	} else {
		t.Log("PostgreSQL cases skipped: set REDELIVER_TEST_POSTGRES to run the database proxy tests")
	}
	if my := os.Getenv("REDELIVER_TEST_MYSQL"); my != "" {
		cfg, err := mysql.ParseDSN(mysqlDSNOf(t, my))
		if err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, testDB{name: "mysql", dsn: cfg.FormatDSN(), text: "VARCHAR(40)"})
	} else if os.Getenv("CI") == "true" {
		t.Fatal("REDELIVER_TEST_MYSQL is not set under CI=true")
	} else {
		t.Log("MySQL cases skipped: set REDELIVER_TEST_MYSQL to run the MySQL proxy tests")
	}
	return dbs
}

// driverOf is the database/sql driver of a DSN as testDB.dsn writes it.
func driverOf(dsn string) string {
	if strings.HasPrefix(dsn, "postgres") {
		return "pgx"
	}
	return "mysql"
}

// dollarParam is a PostgreSQL parameter: $1, $2 …
var dollarParam = regexp.MustCompile(`\$[0-9]+`)

// params writes a PostgreSQL statement's parameters ($1, $2 …) as this
// database's driver takes them: ? on MySQL.
func (d *testDB) params(q string) string {
	if !d.mysql() {
		return q
	}
	return dollarParam.ReplaceAllString(q, "?")
}

// insertIgnore writes an INSERT that writes nothing where the row's key
// is there already: ON CONFLICT DO NOTHING, INSERT IGNORE.
func (d *testDB) insertIgnore(insert string) string {
	if d.mysql() {
		return strings.Replace(insert, "INSERT", "INSERT IGNORE", 1)
	}
	return insert + " ON CONFLICT DO NOTHING"
}

// says writes a PostgreSQL trace's statement as this database's trace
// writes it: go-sql-driver/mysql begins with START TRANSACTION.
func (d *testDB) says(s string) string {
	if d.mysql() && s == "begin" {
		return "START TRANSACTION"
	}
	return s
}

// eachDB runs f as a subtest on each of testDBs, its connection open,
// within limit.
func eachDB(t *testing.T, limit time.Duration, f func(t *testing.T, ctx context.Context, db testDB)) {
	for _, db := range testDBs(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			db.open(t)
			f(t, ctx, db)
		})
	}
}

// mysql reports whether it is MySQL or MariaDB.
func (d *testDB) mysql() bool { return d.name == "mysql" }

// open connects the test's own connection, closed when the test ends.
func (d *testDB) open(t *testing.T) {
	t.Helper()
	db, err := sql.Open(driverOf(d.dsn), d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	d.admin = db
}

// table makes an empty table of columns (name type, …), dropped when
// the test ends, and returns its name: name with this test process's id,
// so that runs of the test at once on one server do not meet.
func (d *testDB) table(t *testing.T, ctx context.Context, name, columns string) string {
	t.Helper()
	name += "_" + strconv.Itoa(os.Getpid())
	ddl := "CREATE TABLE " + name + " (" + columns + ")"
	if d.mysql() {
		ddl += " ENGINE=InnoDB"
	}
	for _, q := range []string{"DROP TABLE IF EXISTS " + name, ddl} {
		if _, err := d.admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { d.admin.Exec("DROP TABLE IF EXISTS " + name) })
	return name
}

// sleeperMark names the connections of the sleepers on table: their
// application_name on PostgreSQL; on MySQL, it is in what they sleep in.
// The test finds their server processes by it.
func sleeperMark(table string) string { return "redeliver_sleeper_" + table }

// sleepers lists the server processes (threads) of the sleepers on
// table still there.
func (d *testDB) sleepers(t *testing.T, table string) []int64 {
	t.Helper()
	q, arg := "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", sleeperMark(table)
	if d.mysql() {
		q, arg = "SELECT id FROM information_schema.processlist WHERE info LIKE ? AND id <> CONNECTION_ID()", "%"+sleeperMark(table)+"%"
	}
	rows, err := d.admin.Query(q, arg)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// end ends server processes (threads) a failed test left.
func (d *testDB) end(ids []int64) {
	for _, id := range ids {
		if d.mysql() {
			d.admin.Exec(fmt.Sprintf("KILL CONNECTION %d", id))
		} else {
			d.admin.Exec("SELECT pg_terminate_backend($1)", id)
		}
	}
}

// locked says why table is still locked by the sleeper (nil: it is not):
// on PostgreSQL the whole table, which waits 2 s for it; on MySQL its row
// 'held', which an insert waits 2 s for.
func (d *testDB) locked(ctx context.Context, table string) error {
	c, err := d.admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if d.mysql() {
		c.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 2")
		_, err := c.ExecContext(ctx, "INSERT INTO "+table+" VALUES ('held')")
		c.ExecContext(ctx, "DELETE FROM "+table+" WHERE k = 'held'")
		return err
	}
	lock, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	_, err = c.ExecContext(lock, "BEGIN; LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE; ROLLBACK")
	return err
}

// mysqlDSNOf is a mysql:// URL as a Go MySQL DSN.
func mysqlDSNOf(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := u.User.Username()
	if pw, ok := u.User.Password(); ok {
		user += ":" + pw
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	return user + "@tcp(" + host + ")" + strings.TrimSuffix(u.Path, "/")
}

// firstCheck loads src as the file name and runs it on seed 1, and
// returns its first check.
func firstCheck(t *testing.T, ctx context.Context, name, src string) runner.CheckResult {
	t.Helper()
	sc, err := scenario.Load(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunFile(ctx, sc, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Checks[0]
}
