// Command consumer is consumertest's consumer as a program of its own. The
// root package's end-to-end tests build it without the race detector and
// put it first on PATH, so that the consumers their scripts start are not
// the race-enabled test binary, which takes several times the CPU to start
// and to run; the tests' consumer is a fixture, not the code under test.
package main

import (
	"os"

	"github.com/redeliver/redeliver/pkg/external/consumertest"
)

func main() { os.Exit(consumertest.Main(os.Args[1:])) }
