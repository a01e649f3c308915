package proc

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	rest := " S 10 12 12 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 10 18446744073709551615"
	tests := []struct {
		name, stat string
		ok         bool
		want       procStat
	}{
		{"plain", "42 (sleep)" + rest, true, procStat{procID{42, "98765"}, 10, 12}},
		{"a name with spaces and parentheses", "42 (a) b (c)" + rest, true, procStat{procID{42, "98765"}, 10, 12}},
		{"a name that fakes fields", "42 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 0 0 1 0 5 y)" + rest, true, procStat{procID{42, "98765"}, 10, 12}},
		{"cut short", "42 (sleep) S 10 12", false, procStat{}},
		{"no name", "42 sleep S 10 12", false, procStat{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat(42, []byte(tt.stat))
			if ok != tt.ok || got != tt.want {
				t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.stat, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestOwnChildren: the cheap list of this process's children (its threads'
// children files) names what the full scan of /proc names.
func TestOwnChildren(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	found := false
	for _, c := range ownChildren() {
		found = found || c == pid
	}
	if !found {
		t.Errorf("ownChildren() = %v, missing the child %d", ownChildren(), pid)
	}
	if p, ok := readProc(pid); !ok || p.ppid != os.Getpid() {
		t.Errorf("readProc(%d) = %+v, %v; want the parent %d", pid, p, ok, os.Getpid())
	}
}

// TestStraysAreEnded: a process that leaves a helper in a session of its
// own, holding its stdout, and exits. The helper is reparented to this
// (subreaper) process and ended, by pid, once the process that started it
// is waited for, so the wait does not last as long as the helper would.
func TestStraysAreEnded(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	Subreap()
	if !subreaping.Load() {
		t.Skip("this kernel does not let a process be a child subreaper")
	}
	var out []byte
	c, err := Spawn(exec.Command("sh", "-c", "setsid sleep 600 & echo $!"),
		func(r io.Reader) { out, _ = io.ReadAll(r) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the wait lasts as long as the helper holding stdout")
	}
	helper, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the helper's pid: %q", out)
	}
	if err := syscall.Kill(helper, 0); err == nil {
		syscall.Kill(helper, syscall.SIGKILL)
		t.Fatalf("the helper %d is still there (or a zombie) after the wait", helper)
	}
}

// TestOrphanInARunningGroupStays: a helper orphaned inside the process
// group of a consumer that still runs (its parent, a subshell, exited) is
// adopted by this process but left alone by a sweep; it goes with the
// group when the consumer ends.
func TestOrphanInARunningGroupStays(t *testing.T) {
	Subreap()
	if !subreaping.Load() {
		t.Skip("this kernel does not let a process be a child subreaper")
	}
	out := make(chan string, 1)
	c, err := Spawn(exec.Command("sh", "-c", "(sleep 600 & echo $!); exec sleep 600"),
		func(r io.Reader) {
			line := make([]byte, 32)
			n, _ := r.Read(line)
			out <- strings.TrimSpace(string(line[:n]))
		}, nil)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.cmd.Process.Pid
	waited := false
	defer func() {
		if !waited {
			signalGroup(leader, sigKill)
			c.Wait()
		}
	}()
	helper, err := strconv.Atoi(<-out)
	if err != nil {
		t.Fatalf("the helper's pid: %v", err)
	}
	// Once the subshell exited, the helper is this process's child.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if p, ok := readProc(helper); ok && p.ppid == os.Getpid() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the helper %d was not reparented to this process", helper)
		}
	}
	EndStrays()
	if p, ok := readProc(helper); !ok || p.pgrp != leader {
		t.Fatalf("the helper %d in the running group %d was ended by a sweep (%+v, %v)", helper, leader, p, ok)
	}
	signalGroup(leader, sigKill)
	waited = true
	if err := c.Wait(); err == nil {
		t.Fatal("the killed leader exited 0")
	}
	if syscall.Kill(helper, 0) == nil {
		syscall.Kill(helper, syscall.SIGKILL)
		t.Fatalf("the helper %d outlived its group's leader", helper)
	}
}
