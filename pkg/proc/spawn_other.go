//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts a started process in a process group of its own: a
// crash or a stop reaches everything it started, and a Ctrl-C at the
// terminal reaches only redeliver, which then stops it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
