// Package proctest has the end-to-end tests start programs built on their
// own, without the race detector, in place of the race-enabled test binary
// run again: a supervisor (pkg/proc/internal/supervisor) for every
// consumer and exec delivery, thousands in all, and, for the scripts,
// redeliver itself, hundreds of times. A race-enabled binary takes several
// times longer to start and about three times the CPU to run.
//
// Of this module it imports only pkg/proc, whose variable it sets.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/redeliver/redeliver/pkg/proc"
)

// ProgramEnv names the supervisor's program to every redeliver started
// from here on; a test that gives its processes an environment of their
// own (testscript's) passes it on.
const ProgramEnv = proc.SupervisorProgramEnv

// UseBuiltSupervisor builds the supervisor into dir and names it in this
// process's environment, which every redeliver the tests start inherits.
// Off Linux, where there is no supervisor, it does nothing; without a go
// command it says so and sets nothing, the supervisors then being
// redeliver itself; a build that fails is an error.
func UseBuiltSupervisor(dir string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	bin, err := build(dir, "supervisor", "github.com/redeliver/redeliver/pkg/proc/internal/supervisor")
	if bin == "" || err != nil {
		return err
	}
	return os.Setenv(ProgramEnv, bin)
}

// BuildRedeliver builds redeliver into dir, as a user's go build would,
// and returns its path; without a go command it returns "" and says so.
func BuildRedeliver(dir string) (string, error) {
	return build(dir, "redeliver", "github.com/redeliver/redeliver")
}

// UseBuiltRedeliver builds redeliver into dir and puts dir first on this
// process's PATH, which the tests' scripts inherit: their exec redeliver
// then runs it. Without a go command it says so and changes nothing.
func UseBuiltRedeliver(dir string) error {
	bin, err := BuildRedeliver(dir)
	if bin == "" || err != nil {
		return err
	}
	return os.Setenv("PATH", strings.Join([]string{dir, os.Getenv("PATH")}, string(os.PathListSeparator)))
}

// build builds the command pkg into dir as name, returning its path, or
// "" when there is no go command to build it with.
func build(dir, name, pkg string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(os.Stderr, "proctest: no go command to build %s with: the test binary serves\n", name)
		return "", nil
	}
	bin := filepath.Join(dir, name)
	out, err := exec.Command(goTool, "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", name, err, out)
	}
	return bin, nil
}
