//go:build unix

package proc

import "syscall"

const (
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGTERM
)

// signalGroup sends sig to the process group pgid.
func signalGroup(pgid int, sig syscall.Signal) { syscall.Kill(-pgid, sig) }
