package main

import (
	"database/sql"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/external/consumertest"
)

// hung is how long a redeliver that should exit at once may take before
// the test calls it hung: it is far beyond any run here, and far below
// the helpers' own lives (600 s), which a hung redeliver waits for.
const hung = 90 * time.Second

// needStrays skips where a helper cannot leave its process group the way
// these tests make it (setsid), or redeliver cannot adopt it (Linux only).
func needStrays(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("finding descendants that left the process group needs Linux")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
}

// pids reads the process ids a test's helpers wrote, one a line, and
// kills those still alive when the test ends, whatever happened.
func pids(t *testing.T, file string) []int {
	t.Helper()
	data, _ := os.ReadFile(file)
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func killLeft(t *testing.T, file string) {
	t.Cleanup(func() {
		for _, pid := range pids(t, file) {
			if helper(pid, file) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// helper reports whether pid is alive and still one of the processes a
// test's script started and named in file: a `sleep 600`, or a process
// whose command line names the test's folder. On a busy machine pids wrap,
// and a pid the script wrote may name another process by the time it is
// looked at, which must be neither killed nor counted as left.
func helper(pid int, file string) bool {
	if !alive(pid) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return string(cmdline) == "sleep\x00600\x00" || strings.Contains(string(cmdline), filepath.Dir(file))
}

// runRedeliver runs redeliver with args and returns its exit status and
// stderr, failing the test (and killing it) if it does not exit.
func runRedeliver(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("redeliver", args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String() + stderr.String()
	case <-time.After(hung):
		cmd.Process.Kill()
		<-done
		t.Fatalf("redeliver %s did not exit within %s; its output:\n%s%s", strings.Join(args, " "), hung, stdout.String(), stderr.String())
	}
	return 0, ""
}

// TestStrayHelperOfStartedConsumer: a start command whose shell leaves a
// helper in a session of its own (setsid) before it becomes the consumer.
// The helper holds the consumer's stdout and stderr and is out of reach of
// a signal to the consumer's process group; redeliver still exits as soon
// as the run ends, and the helper is gone.
func TestStrayHelperOfStartedConsumer(t *testing.T) {
	t.Parallel()
	needStrays(t)
	dir := t.TempDir()
	port, err := consumertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	helpers := filepath.Join(dir, "helpers")
	killLeft(t, helpers)
	file := filepath.Join(dir, "s.yaml")
	src := `version: 1
target:
  http: {url: "http://127.0.0.1:` + port + `/events"}
  start:
    command: [sh, -c, "setsid sleep 600 & echo $! >> '` + helpers + `'; exec consumer --listen 127.0.0.1:` + port + ` --db '` + filepath.Join(dir, "c.db") + `'"]
    ready: http://127.0.0.1:` + port + `/healthz
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: one
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        expect: acked
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runRedeliver(t, "run", file)
	if code != 0 || !strings.Contains(out, "PASS: one") {
		t.Fatalf("exit %d, want 0 and PASS; output:\n%s", code, out)
	}
	noneLeft(t, helpers, 1)
}

// TestStrayHelperOfExecTarget: an exec consumer whose shell leaves a
// helper holding its stderr, in a session of its own. Each delivery is
// answered when its process exits, not when the helper lets go of stderr,
// and no helper is left.
func TestStrayHelperOfExecTarget(t *testing.T) {
	t.Parallel()
	needStrays(t)
	dir := t.TempDir()
	helpers := filepath.Join(dir, "helpers")
	killLeft(t, helpers)
	file := filepath.Join(dir, "s.yaml")
	src := `version: 1
target:
  exec:
    command: [sh, -c, "setsid sleep 600 & echo $! >> '` + helpers + `'; exec consumer --exec --db '` + filepath.Join(dir, "c.db") + `'"]
    timeout: 30s
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: two
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        expect: acked
      - deliver: {id: evt-2, data: {orderId: O-2}}
        expect: acked
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := runRedeliver(t, "run", file)
	if code != 0 || !strings.Contains(out, "PASS: two") {
		t.Fatalf("exit %d, want 0 and PASS; output:\n%s", code, out)
	}
	noneLeft(t, helpers, 2)
}

// TestStrayHelperAfterSignal: SIGTERM to redeliver while its consumer
// runs with a helper that left the process group: exit 130, and neither
// the consumer nor the helper is left.
func TestStrayHelperAfterSignal(t *testing.T) {
	t.Parallel()
	needStrays(t)
	dir := t.TempDir()
	port, err := consumertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	helpers := filepath.Join(dir, "helpers")
	killLeft(t, helpers)
	file := filepath.Join(dir, "s.yaml")
	// The consumer writes its own pid to the same file.
	src := `version: 1
target:
  http: {url: "http://127.0.0.1:` + port + `/events"}
  start:
    command: [sh, -c, "setsid sleep 600 & echo $! >> '` + helpers + `'; echo $$ >> '` + helpers + `'; exec consumer --listen 127.0.0.1:` + port + ` --db '` + filepath.Join(dir, "c.db") + `'"]
    ready: http://127.0.0.1:` + port + `/healthz
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: waits
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        delay: 1h
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redeliver", "run", file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitListening(t, port)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(hung):
		t.Fatalf("redeliver did not exit within %s of SIGTERM; stderr:\n%s", hung, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
	}
	noneLeft(t, helpers, 2)
}

// TestSigkillTakesTheConsumer: redeliver killed with SIGKILL (what a CI
// job's timeout does) takes the consumer it started with it.
func TestSigkillTakesTheConsumer(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	dir := t.TempDir()
	port, err := consumertest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pidfile := filepath.Join(dir, "consumer.pid")
	killLeft(t, pidfile)
	file := filepath.Join(dir, "s.yaml")
	src := `version: 1
target:
  http: {url: "http://127.0.0.1:` + port + `/events"}
  start:
    command: [consumer, --listen, "127.0.0.1:` + port + `", --db, "` + filepath.Join(dir, "c.db") + `", --pidfile, "` + pidfile + `"]
    ready: http://127.0.0.1:` + port + `/healthz
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: waits
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        delay: 1h
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redeliver", "run", file)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitListening(t, port)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	noneLeft(t, pidfile, 1)
}

// TestSigkillTakesWhatTheConsumerStarted: redeliver killed with SIGKILL
// takes with it, on Linux, every process its consumer's start command
// started, not only the one it started itself: a shell that runs the
// consumer without exec, and a helper in a session of its own (setsid).
func TestSigkillTakesWhatTheConsumerStarted(t *testing.T) {
	t.Parallel()
	needStrays(t)
	tests := []struct {
		name string
		// sh is the start command's shell script: PIDS is the file each
		// process it starts writes its pid to, CONSUMER the consumer.
		sh string
		n  int
	}{
		{"a shell that does not exec the consumer", "echo $$ >> PIDS; CONSUMER; echo the consumer exited", 2},
		{"a helper in a session of its own", "setsid sleep 600 & echo $! >> PIDS; exec CONSUMER", 2},
		{"both", "setsid sh -c 'echo $$ >> PIDS; exec sleep 600' & echo $$ >> PIDS; CONSUMER; echo the consumer exited", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			port, err := consumertest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			pidfile := filepath.Join(dir, "pids")
			killLeft(t, pidfile)
			consumer := "consumer --listen 127.0.0.1:" + port + " --db '" + filepath.Join(dir, "c.db") + "' --pidfile '" + filepath.Join(dir, "consumer.pid") + "'"
			sh := strings.NewReplacer("PIDS", pidfile, "CONSUMER", consumer).Replace(tt.sh)
			file := filepath.Join(dir, "s.yaml")
			src := `version: 1
target:
  http: {url: "http://127.0.0.1:` + port + `/events"}
  start:
    command: [sh, -c, "` + strings.ReplaceAll(sh, `"`, `\"`) + `"]
    ready: http://127.0.0.1:` + port + `/healthz
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: waits
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
        delay: 1h
`
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("redeliver", "run", file)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitListening(t, port)
			// Every process has written its pid once the consumer answers,
			// but for a helper the shell put in the background: wait for it.
			for deadline := time.Now().Add(hung); len(pids(t, pidfile)) < tt.n-1 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			consumerPid, _ := os.ReadFile(filepath.Join(dir, "consumer.pid"))
			f, err := os.OpenFile(pidfile, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(append(consumerPid, '\n'))
			f.Close()
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			noneLeft(t, pidfile, tt.n)
		})
	}
}

// TestSigkillTakesAnExecDelivery: redeliver killed with SIGKILL while an
// exec delivery's shell runs takes the shell, its child, and a helper in
// a session of its own with it.
func TestSigkillTakesAnExecDelivery(t *testing.T) {
	t.Parallel()
	needStrays(t)
	dir := t.TempDir()
	pidfile := filepath.Join(dir, "pids")
	killLeft(t, pidfile)
	db := filepath.Join(dir, "c.db")
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec("CREATE TABLE payments (order_id TEXT)")
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.yaml")
	src := `version: 1
target:
  exec:
    command: [sh, -c, "setsid sleep 600 & echo $! >> '` + pidfile + `'; sleep 600 & echo $! >> '` + pidfile + `'; echo $$ >> '` + pidfile + `'; wait"]
    timeout: 10m
effects: {db: "` + db + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: hangs
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redeliver", "run", file)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(hung); len(pids(t, pidfile)) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the delivery did not start its processes within %s; stderr:\n%s", hung, stderr.String())
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	noneLeft(t, pidfile, 3)
}

// waitListening waits until a consumer answers on port.
func waitListening(t *testing.T, port string) {
	t.Helper()
	deadline := time.Now().Add(hung)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s after %s", port, hung)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noneLeft checks that the n processes whose pids file names are gone. A
// process killed a moment ago may take a moment to be reaped; one still
// running after ten seconds was left behind.
func noneLeft(t *testing.T, file string, n int) {
	t.Helper()
	got := pids(t, file)
	if len(got) != n {
		t.Fatalf("%s names %d processes, want %d", file, len(got), n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range got {
		// Once gone, gone: asked again, a pid may already name a new
		// process (see helper).
		gone := !helper(pid, file)
		for !gone && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			gone = !helper(pid, file)
		}
		if !gone {
			t.Errorf("process %d that redeliver started (or its consumer did) is still running after redeliver exited", pid)
		}
	}
}
