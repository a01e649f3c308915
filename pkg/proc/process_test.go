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
