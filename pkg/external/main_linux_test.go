package external

import (
	"os"
	"testing"

	"github.com/redeliver/redeliver/pkg/effects"
)

// TestMain runs this test binary as one of the processes the tests start
// when a test asked for one: a consumer, or redeliver's guardian of a
// MySQL consumer's threads.
func TestMain(m *testing.M) {
	if code, ok := effects.RunGuardian(); ok {
		os.Exit(code)
	}
	for _, p := range []struct {
		env string
		run func(dsn string) int
	}{
		{"REDELIVER_TEST_SLEEPER", sleeper},
		{"REDELIVER_TEST_EXEC_SLEEPER", execSleeper},
		{"REDELIVER_TEST_SPLIT", splitWriter},
		{"REDELIVER_TEST_LATE", lateWorker},
		{"REDELIVER_TEST_SESSION", sessionOfSleeper},
	} {
		if dsn := os.Getenv(p.env); dsn != "" {
			os.Exit(p.run(dsn))
		}
	}
	os.Exit(m.Run())
}
