//go:build !linux

package proc

import (
	"os"
	"os/exec"
	"sync/atomic"
)

// Supervise returns false and changes nothing here: the processes this
// package starts are started directly. A supervisor needs Linux's
// parent-death signal and child subreaper, which other systems lack.
func Supervise() (int, bool) { return 0, false }

// supervised is never set here.
var supervised atomic.Bool

// superviseCmd leaves cmd as it is (see Supervise).
func superviseCmd(*exec.Cmd) (*os.File, error) { return nil, nil }

// supervisorStarted is never called here: superviseCmd returns no pipe.
func supervisorStarted(*os.File, *exec.Cmd) (int, error) { return 0, nil }
