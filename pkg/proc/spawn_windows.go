package proc

import (
	"os"
	"syscall"
)

const (
	sigKill = syscall.SIGKILL
	sigTerm = syscall.SIGKILL // Windows has no polite stop for a console process
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// signalGroup ends the process pgid (Windows has no process groups to signal).
func signalGroup(pgid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pgid); err == nil {
		p.Kill()
	}
}
