package external

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/proc"
)

// TestCallerOfOneInstance: with one started instance, a held call is that
// instance's, without looking for the process that holds its connection
// (proc.TestHolder finds it among several).
func TestCallerOfOneInstance(t *testing.T) {
	p := &proc.Process{}
	s := &Session{procs: []*proc.Process{p}, proc: p}
	if got := s.caller(nil); got != p {
		t.Errorf("caller = %p, want the one instance %p", got, p)
	}
}
