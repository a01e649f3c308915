package main

import "syscall"

// runAttr starts a process the tests run (redeliver, a consumer) in a
// process group of its own, so a timed-out one is killed with what it
// started, and sends it SIGINT, as Ctrl-C would, if the test binary dies
// first: it stops what it started instead of running on as an orphan.
func runAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
}
