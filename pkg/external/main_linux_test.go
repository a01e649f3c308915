package external

import (
	"os"
	"testing"
)

// TestMain runs this test binary as one of the processes the tests start
// when a test asked for one.
func TestMain(m *testing.M) {
	if dsn := os.Getenv("REDELIVER_TEST_SLEEPER"); dsn != "" {
		os.Exit(sleeper(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_MYSQL_SLEEPER"); dsn != "" {
		os.Exit(mysqlSleeper(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_EXEC_SLEEPER"); dsn != "" {
		os.Exit(execSleeper(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_MYSQL_EXEC_SLEEPER"); dsn != "" {
		os.Exit(mysqlExecSleeper(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_SPLIT"); dsn != "" {
		os.Exit(splitWriter(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_MYSQL_SPLIT"); dsn != "" {
		os.Exit(mysqlSplitWriter(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_LATE"); dsn != "" {
		os.Exit(lateWorker(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_MYSQL_LATE"); dsn != "" {
		os.Exit(mysqlLateWorker(dsn))
	}
	if dsn := os.Getenv("REDELIVER_TEST_SESSION"); dsn != "" {
		os.Exit(sessionOfSleeper(dsn))
	}
	os.Exit(m.Run())
}
