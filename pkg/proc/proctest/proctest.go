// Package proctest has the end-to-end tests start a supervisor built on
// its own (pkg/proc/internal/supervisor), without the race detector, in
// place of the race-enabled test binary run again: the tests start a
// supervisor for every consumer and exec delivery, thousands in all, and
// a race-enabled binary takes several times longer to start.
//
// Of this module it imports only pkg/proc, whose variable it sets.
package proctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

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
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "proctest: no go command to build the supervisor with: redeliver supervises as itself")
		return nil
	}
	bin := filepath.Join(dir, "supervisor")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/redeliver/redeliver/pkg/proc/internal/supervisor").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build the supervisor: %v\n%s", err, out)
	}
	return os.Setenv(ProgramEnv, bin)
}
