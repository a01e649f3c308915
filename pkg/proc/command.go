package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Program resolves a command's program as a shell would: a name with a
// slash is a path from the current directory, a bare name is looked up
// in PATH.
func Program(name string) string {
	if strings.ContainsRune(name, '/') && !filepath.IsAbs(name) {
		if abs, err := filepath.Abs(name); err == nil {
			return abs
		}
	}
	return name
}

// Environ is redeliver's environment with extra added: the environment
// a started process runs with.
func Environ(extra map[string]string) []string {
	env := os.Environ()
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// UnwrapExec is the cause of an error starting a process (a missing
// program, a permission denied), without the path and operation that
// wrap it.
func UnwrapExec(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}
