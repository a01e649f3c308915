// Command supervisor is redeliver's supervisor and nothing else: the
// program proc.Supervise runs when it is asked to be one, without the rest
// of redeliver. The end-to-end tests build it, without the race detector,
// and name it in REDELIVER_INTERNAL_SUPERVISOR_PROGRAM: the race-enabled
// test binaries they run as redeliver take several times longer to start
// than it does, and they start a supervisor for every consumer and exec
// delivery. redeliver itself never needs it.
package main

import (
	"fmt"
	"os"

	"github.com/redeliver/redeliver/pkg/proc"
)

func main() {
	if code, ok := proc.Supervise(); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "supervisor: run only by redeliver, as the supervisor of a process it starts")
	os.Exit(2)
}
