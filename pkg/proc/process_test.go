package proc

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestExiting: a started consumer that lives is not taken for dying; one
// that was killed is.
func TestExiting(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here: a dying consumer is told by its address (TestListening)")
	}
	p, err := Start(context.Background(), &scenario.Start{Command: []string{"sh", "-c", "echo ready; exec sleep 60"}, ReadyLine: "ready", ReadyTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if exiting, known := p.Exiting(); exiting || !known {
		t.Errorf("a live consumer: exiting() = %v, %v; want false, true", exiting, known)
	}
	p.Kill()
	if exiting, known := p.Exiting(); !exiting || !known {
		t.Errorf("a killed consumer: exiting() = %v, %v; want true, true", exiting, known)
	}
}

// TestStopSaysWhenItOverran: Stop says a consumer did not end within
// StopGrace of its SIGTERM, and was killed, only when that is so; a
// second Stop signals nothing and says nothing.
func TestStopSaysWhenItOverran(t *testing.T) {
	for _, tt := range []struct {
		name    string
		script  string
		overran bool
	}{
		{"ends on SIGTERM", "echo ready; exec sleep 60", false},
		// The shell and its sleep ignore SIGTERM: only the SIGKILL after
		// the grace ends them.
		{"ignores SIGTERM", "trap '' TERM; echo ready; sleep 60", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Start(context.Background(), &scenario.Start{Command: []string{"sh", "-c", tt.script}, ReadyLine: "ready", ReadyTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Stop(); got != tt.overran {
				t.Errorf("Stop() = %v, want %v", got, tt.overran)
			}
			if p.Stop() {
				t.Error("a second Stop() says it overran")
			}
			if p.Running() {
				t.Error("still running after Stop")
			}
		})
	}
}
