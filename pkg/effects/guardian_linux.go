package effects

import (
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// guarding is set once the program's main runs guardians when asked
// (RunGuardian): only then is it safe to run the program again as one.
var guarding atomic.Bool

// RunGuardian is called first thing in main, before any other work. In a
// guardian that redeliver started it does the guardian's work and
// returns its exit status and true. Otherwise it lets StartGuardian start
// guardians from then on, and returns false: call it only from a program
// whose main calls it first, since the guardian is the program run again.
func RunGuardian() (int, bool) {
	if _, ok := os.LookupEnv(guardianEnv); !ok {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			guarding.Store(true)
		}
		return 0, false
	}
	os.Unsetenv(guardianEnv)
	return guard(os.NewFile(guardianFd, "guardian")), true
}

// StartGuardian starts the guardian of the consumer's threads on a MySQL
// effects database; on another database, or in a program whose main
// does not call RunGuardian, there is none (nil).
func (d *DB) StartGuardian() (*Guardian, error) {
	if d.s.guardianDSN() == "" || !guarding.Load() {
		return nil, nil
	}
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{os.Args[0]}
	// A session of its own: a signal to redeliver's process group (a
	// Ctrl-C, a kill of the group) does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return d.newGuardian(cmd)
}
