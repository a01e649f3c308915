package consumertest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// UseBuilt builds the consumer into dir as the program consumer, without
// the race detector, and puts dir first on this process's PATH, which the
// tests' scripts and every redeliver they start inherit. Without a go
// command it says so and changes nothing: the test binary's own consumer
// command serves. A build that fails is an error.
func UseBuilt(dir string) error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumertest: no go command to build the consumer with: the test binary's consumer serves")
		return nil
	}
	bin := filepath.Join(dir, "consumer")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/redeliver/redeliver/pkg/external/consumertest/internal/consumer").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build the consumer: %v\n%s", err, out)
	}
	return os.Setenv("PATH", strings.Join([]string{dir, os.Getenv("PATH")}, string(os.PathListSeparator)))
}
