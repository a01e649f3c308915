package external

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestWithDBURL: ${REDELIVER_DB_URL} and ${REDELIVER_JDBC_URL} are filled
// in wherever the start command and its env use them, and both are set
// in the consumer's environment.
func TestWithDBURL(t *testing.T) {
	s := &Session{dbURL: "postgres://app@127.0.0.1:40000/shop?sslmode=disable", jdbcURL: "jdbc:postgresql://127.0.0.1:40000/shop?sslmode=disable&user=app"}
	tg := &scenario.Target{Start: &scenario.Start{
		Command: []string{"java", "-Dspring.datasource.url=${REDELIVER_JDBC_URL}", "-jar", "c.jar", "--db=${REDELIVER_DB_URL}"},
		Env:     map[string]string{"JDBC_DATABASE_URL": "${REDELIVER_JDBC_URL}", "DATABASE_URL": "${REDELIVER_DB_URL}"},
	}}
	got := s.withDBURL(tg).Start
	wantCmd := []string{"java", "-Dspring.datasource.url=" + s.jdbcURL, "-jar", "c.jar", "--db=" + s.dbURL}
	for i := range wantCmd {
		if got.Command[i] != wantCmd[i] {
			t.Errorf("command[%d] = %q, want %q", i, got.Command[i], wantCmd[i])
		}
	}
	for k, want := range map[string]string{"JDBC_DATABASE_URL": s.jdbcURL, "DATABASE_URL": s.dbURL, "REDELIVER_JDBC_URL": s.jdbcURL, "REDELIVER_DB_URL": s.dbURL} {
		if got.Env[k] != want {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], want)
		}
	}
}
