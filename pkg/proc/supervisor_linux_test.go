package proc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs this test binary as a supervisor when a test started it
// as one (the supervisor is the program run again).
func TestMain(m *testing.M) {
	if code, ok := superviseIfAsked(); ok {
		syscall.Exit(code)
	}
	os.Exit(m.Run())
}

// outcome is how a started process ended, and what it wrote.
type outcome struct {
	exited bool
	code   int
	signal syscall.Signal
	status string // as the messages show it
	out    string
	err    string // the start error
}

// runAs starts cmd directly or through a supervisor, with stdin, and
// waits for it.
func runAs(t *testing.T, supervise bool, stdin string, name string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out []byte
	c, err := spawnAs(cmd, supervise, func(r io.Reader) { out, _ = io.ReadAll(r) }, func(r io.Reader) { io.Copy(io.Discard, r) })
	if err != nil {
		return outcome{err: UnwrapExec(err).Error()}
	}
	err = c.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	o := outcome{exited: ws.Exited(), code: ws.ExitStatus(), out: string(out), status: cmd.ProcessState.String()}
	if ws.Signaled() {
		o.signal = ws.Signal()
		// Whether a core was dumped depends on the system; the
		// supervisor never dumps one.
		o.status = strings.TrimSuffix(o.status, " (core dumped)")
	}
	// A group killed at once may take the supervisor before it said
	// which process it started.
	if supervise && c.pid == cmd.Process.Pid && o.signal != syscall.SIGKILL {
		t.Errorf("the supervisor %d says it started itself", c.pid)
	}
	return o
}

// TestSupervisorMirrors: a process started through a supervisor ends, as
// redeliver sees it, exactly as it does when started directly: the same
// exit status or killing signal, the same output from the same input, the
// same start error.
func TestSupervisorMirrors(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	os.WriteFile(garbage, []byte{0, 1, 2, 3, 4, 5, 6, 7}, 0o755)
	tests := []struct {
		name  string
		stdin string
		cmd   []string
	}{
		{"exit 0", "", []string{"true"}},
		{"exit 1", "", []string{"false"}},
		{"exit 3, stderr", "", []string{"sh", "-c", "echo oops >&2; exit 3"}},
		{"stdin to stdout", "the event\n", []string{"cat"}},
		{"killed", "", []string{"sh", "-c", "kill -KILL $$"}},
		{"terminated", "", []string{"sh", "-c", "kill -TERM $$"}},
		{"interrupted", "", []string{"sh", "-c", "kill -INT $$"}},
		{"hung up", "", []string{"sh", "-c", "kill -HUP $$"}},
		{"a fault", "", []string{"sh", "-c", "kill -SEGV $$"}},
		{"quit", "", []string{"sh", "-c", "kill -QUIT $$"}},
		{"user signal", "", []string{"sh", "-c", "kill -USR1 $$"}},
		{"its group killed", "", []string{"sh", "-c", "kill -KILL 0"}},
		{"not executable", "", []string{notExec}},
		{"not a program", "", []string{garbage}},
		{"no such directory", "", []string{filepath.Join(dir, "none", "x")}},
		{"not found", "", []string{"redeliver-no-such-program"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := runAs(t, false, tt.stdin, tt.cmd[0], tt.cmd[1:]...)
			got := runAs(t, true, tt.stdin, tt.cmd[0], tt.cmd[1:]...)
			if got != want {
				t.Errorf("through a supervisor: %+v\ndirectly:           %+v", got, want)
			}
		})
	}
	// Under nohup, a process started directly ignores SIGHUP, and so does
	// one started through a supervisor.
	t.Run("hung up, ignored", func(t *testing.T) {
		signal.Ignore(syscall.SIGHUP)
		defer signal.Reset(syscall.SIGHUP)
		want := runAs(t, false, "", "sh", "-c", "kill -HUP $$")
		got := runAs(t, true, "", "sh", "-c", "kill -HUP $$")
		if got != want || !want.exited {
			t.Errorf("through a supervisor: %+v\ndirectly:           %+v; want both to exit", got, want)
		}
	})
}

// TestSupervisorSharesTheGroup: the supervisor leads the process group and
// the process runs in it, so a crash (SIGKILL to the group) takes both at
// once, and a stop (SIGTERM to the group) reaches the process, which
// exits by it.
func TestSupervisorSharesTheGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command("sleep", "600")
			c, err := spawnAs(cmd, true, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := readProc(c.pid)
			if !ok || p.pgrp != cmd.Process.Pid || p.ppid != cmd.Process.Pid {
				t.Errorf("the process %d: %+v, %v; want the child of the supervisor %d, in its group", c.pid, p, ok, cmd.Process.Pid)
			}
			signalGroup(cmd.Process.Pid, sig)
			c.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("the supervisor ended %v; want by %v", cmd.ProcessState, sig)
			}
			if running(c.pid) {
				syscall.Kill(c.pid, syscall.SIGKILL)
				t.Errorf("the process %d outlived its group", c.pid)
			}
		})
	}
}

// running reports whether pid still runs a moment later: not gone, and
// not a zombie waiting for whoever adopted it to reap it.
func running(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return false
		}
		if i := bytes.LastIndexByte(data, ')'); i > 0 && bytes.HasPrefix(data[i+1:], []byte(" Z")) {
			return false
		}
	}
	return true
}

// BenchmarkStart measures one start and wait of a process that does
// nothing (true), as an exec delivery starts one: directly, and through a
// supervisor (this test binary run again).
func BenchmarkStart(b *testing.B) {
	for _, supervise := range []bool{false, true} {
		name := "direct"
		if supervise {
			name = "supervised"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				c, err := spawnAs(exec.Command("true"), supervise, nil, func(r io.Reader) { io.Copy(io.Discard, r) })
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
