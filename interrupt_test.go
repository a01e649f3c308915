package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/external/consumertest"
)

// TestInterruptStopsTheConsumer sends SIGINT to a real redeliver process
// while the consumer it started is running, and checks that redeliver exits
// with 130 and leaves no process behind.
func TestInterruptStopsTheConsumer(t *testing.T) {
	t.Parallel()
	interrupt(t, "listening", func(dir, file string) []string { return []string{"run", file} }, "")
}

// TestInterruptWhileWaitingForReady interrupts redeliver while it waits
// for a consumer that never becomes ready.
func TestInterruptWhileWaitingForReady(t *testing.T) {
	t.Parallel()
	interrupt(t, "a line it never prints", func(dir, file string) []string { return []string{"run", file} }, "")
}

// TestInterruptedReplaySaysWhatItSent interrupts a replay into a target:
// it says how many deliveries it sent, and leaves no process behind.
func TestInterruptedReplaySaysWhatItSent(t *testing.T) {
	t.Parallel()
	interrupt(t, "listening", func(dir, file string) []string {
		capture := filepath.Join(dir, "capture.ndjson")
		var b strings.Builder
		for i := range 1000 {
			b.WriteString(`{"specversion":"1.0","id":"evt-` + strconv.Itoa(i) + `","source":"s","type":"t","data":{"orderId":"O-` + strconv.Itoa(i) + `"}}` + "\n")
		}
		if err := os.WriteFile(capture, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"replay", capture, "--target", filepath.Join(dir, "t.yaml")}
	}, "deliveries were sent to the target before the replay stopped")
}

func interrupt(t *testing.T, ready string, args func(dir, file string) []string, wantStderr string) {
	dir := t.TempDir()
	port, err := consumertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(dir, "consumer.pid")
	scenario := `version: 1
target:
  http: {url: "http://127.0.0.1:` + port + `/events"}
  start:
    command: [consumer, --listen, "127.0.0.1:` + port + `", --db, "` + filepath.Join(dir, "c.db") + `", --pidfile, "` + pidfile + `", --work, 10ms]
    ready: {stdout: "` + ready + `"}
    ready_timeout: 10m
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: waits
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        delay: 1h
`
	file := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(file, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same target without checks, for replay --target.
	targetOnly, _, _ := strings.Cut(scenario, "checks:")
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte(targetOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	// testscript.Main put "redeliver" and "consumer" on PATH.
	cmd := exec.Command("redeliver", args(dir, file)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pid int
	for pid == 0 {
		if data, err := os.ReadFile(pidfile); err == nil && len(data) > 0 {
			pid, _ = strconv.Atoi(string(data))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Wait until the consumer is ready and redeliver is in the step's delay:
	// the consumer answers its health check then.
	for !alive(pid) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let redeliver reach the delay; correctness does not depend on it
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("redeliver exited with %v, want status 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), wantStderr) {
		t.Errorf("stderr:\n%s\nwant it to say %q", stderr.String(), wantStderr)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the consumer (pid %d) is still running after redeliver was interrupted", pid)
	}
}

// alive reports whether a process exists (and is not a zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data))
	return len(fields) < 3 || fields[2] != "Z"
}
