package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// A supervisor is redeliver itself, run again (/proc/self/exe) as the
// process redeliver starts in place of a consumer or an exec delivery's
// process. It leads the process group, starts the real process in it with
// the same standard streams, and ends by mirroring its exit. It is there
// for the one ending redeliver cannot handle itself: redeliver killed with
// SIGKILL. The kernel then sends the supervisor its parent-death signal,
// and it kills, by pid, every descendant it has — those that left the
// group and those the process started through a shell or a launcher —
// reaps them, and exits. A process that left the group is the
// supervisor's to adopt (it is a child subreaper), so none escapes it.
//
// Everything else stays redeliver's: a stop is SIGTERM to the group, which
// the supervisor shares with the process and ignores (it waits for the
// process to exit); a crash is SIGKILL to the group, which takes both at
// once; what is left once the process exited is ended as before, the
// supervisor's adopted strays passing to redeliver when it exits.

// supervisorEnv marks a run of redeliver as a supervisor; its value is
// the pid of the redeliver that started it. It is no part of the
// started process's environment.
const supervisorEnv = "REDELIVER_INTERNAL_SUPERVISOR"

// supervisorFd is the supervisor's status pipe: "ok PID" once the process
// started, "errno N" or "error TEXT" when it could not be.
const supervisorFd = 3

// supervised is set once the processes this package starts go through a
// supervisor.
var supervised atomic.Bool

// Supervise is called first thing in main, before any other work. In a
// supervisor that redeliver started it runs the process it was given and
// returns its exit status and true (a process that died by a signal ends
// the supervisor by the same signal, and Supervise does not return).
// Otherwise it has this package start every process through a supervisor
// from then on, and returns false: call it only from a program whose main
// calls it first, since the supervisor is the program run again.
func Supervise() (int, bool) {
	if code, ok := superviseIfAsked(); ok {
		syscall.Exit(code)
		return code, true
	}
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		supervised.Store(true)
	}
	return 0, false
}

// superviseIfAsked runs the supervisor when this process is one.
func superviseIfAsked() (int, bool) {
	v, ok := os.LookupEnv(supervisorEnv)
	if !ok {
		return 0, false
	}
	os.Unsetenv(supervisorEnv)
	parent, err := strconv.Atoi(v)
	if err != nil || len(os.Args) < 3 {
		fmt.Fprintf(os.Stderr, "%s=%q is set for a program redeliver did not start\n", supervisorEnv, v)
		return 2, true
	}
	return supervise(parent, os.Args[1], os.Args[2:]), true
}

// prSetPdeathsig and prSetDumpable are options of prctl(2).
const (
	prSetPdeathsig = 1
	prSetDumpable  = 4
)

// supervise starts path with argv (argv[0] first) and waits for it, as
// described above; parent is the pid of redeliver.
func supervise(parent int, path string, argv []string) int {
	// The started process's parent-death signal is tied to this thread.
	runtime.LockOSThread()
	status := os.NewFile(supervisorFd, "status")
	syscall.CloseOnExec(supervisorFd)
	report := func(s string) {
		if status != nil {
			io.WriteString(status, s)
			status.Close()
			status = nil
		}
	}
	sigs := catchSignals()
	// The parent-death signal (SIGTERM) is caught from here on; a
	// redeliver that died before is seen here.
	if os.Getppid() != parent {
		return 1
	}
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			report(fmt.Sprintf("errno %d", uintptr(errno)))
		} else {
			report("error " + err.Error())
		}
		return 127
	}
	report("ok " + strconv.Itoa(proc.Pid))
	return awaitExit(sigs, parent, proc.Pid)
}

// catchSignals starts catching the signals the supervisor waits on: a
// child's exit, and a stop or redeliver's death.
func catchSignals() chan os.Signal {
	sigs := make(chan os.Signal, 16)
	// A group's SIGINT or SIGHUP must not end the supervisor before the
	// process; but one redeliver ignores (started by nohup) stays
	// ignored, for the process too, as when it is started directly.
	caught := []os.Signal{syscall.SIGCHLD, syscall.SIGTERM}
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			caught = append(caught, sig)
		}
	}
	signal.Notify(sigs, caught...)
	return sigs
}

// awaitExit waits, signal by signal, for the started process (pid) to
// exit, and returns what the supervisor then exits with: the process's
// ending mirrored, or 137 once redeliver (parent) is gone.
func awaitExit(sigs chan os.Signal, parent, pid int) int {
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			if os.Getppid() != parent {
				// redeliver is gone (the parent-death signal).
				endDescendants()
				return 137
			}
			// A stop: the signal reached the process's group, this
			// supervisor's own; the process's exit is waited for.
			continue
		}
		if code, exited := reapChildren(parent, pid); exited {
			return code
		}
	}
	return 1
}

// reapChildren reaps every child that has exited. Once the started
// process (pid) is one, it returns the exit mirroring it, and true.
func reapChildren(parent, pid int) (code int, exited bool) {
	for {
		got, ws := reapOne()
		if got == 0 {
			return 0, false
		}
		if got == pid {
			if os.Getppid() != parent {
				// redeliver died as the process exited: what it
				// left would be reparented past it.
				endDescendants()
			}
			return mirror(ws), true
		}
		// An adopted orphan that exited: reaped, so no zombie stays.
	}
}

// reapOne reaps one child that has exited, without waiting: its pid and
// how it ended, or pid 0 when none has (or there is no child left).
func reapOne() (pid int, ws syscall.WaitStatus) {
	for {
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if got <= 0 || err != nil {
			return 0, ws
		}
		return got, ws
	}
}

// mirror ends the supervisor as the process ended: with its exit status,
// or by the signal that killed it.
func mirror(ws syscall.WaitStatus) int {
	if ws.Exited() {
		// Not os.Exit: there is nothing to flush, and a race-enabled
		// build would wait at exit.
		syscall.Exit(ws.ExitStatus())
	}
	if ws.Signaled() {
		sig := ws.Signal()
		// No core of the supervisor for a process that dumped its own.
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
		// The signal's default action, set directly: the Go runtime's
		// handler would not die the same way for every signal. A zero
		// sigaction is SIG_DFL, no flags and an empty mask on every
		// Linux architecture; the set's size is 8 bytes but on MIPS.
		var act [8]uint64
		for _, size := range []uintptr{8, 16} {
			if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, size, 0, 0); errno == 0 {
				break
			}
		}
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second)
		syscall.Exit(128 + int(sig))
	}
	syscall.Exit(1)
	return 1
}

// endDescendants kills every descendant of the supervisor, by pid, and
// reaps them, until none is left: one that forks meanwhile leaves a child
// that is reparented to the supervisor when it dies, and is found next.
func endDescendants() {
	self := os.Getpid()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var ids []procID
		for _, p := range descendants(self) {
			ids = append(ids, p.procID)
		}
		if len(ids) == 0 {
			return
		}
		signalLeft(ids, syscall.SIGKILL)
		for {
			if got, _ := reapOne(); got == 0 {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// superviseCmd has cmd, not yet started, run through a supervisor, and
// returns the read end of the supervisor's status pipe, or nil where cmd
// runs as it is: when it cannot start anyway (its program was not found;
// Start says so as it would).
func superviseCmd(cmd *exec.Cmd) (*os.File, error) {
	if cmd.Err != nil || len(cmd.ExtraFiles) > 0 {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(withoutVar(env, supervisorEnv), supervisorEnv+"="+strconv.Itoa(os.Getpid()))
	args := append([]string{os.Args[0], cmd.Path}, cmd.Args...)
	cmd.Path, cmd.Args, cmd.Env = "/proc/self/exe", args, env
	if p := os.Getenv(SupervisorProgramEnv); p != "" {
		cmd.Path = p
	}
	cmd.ExtraFiles = []*os.File{w}
	// The supervisor learns that redeliver died, and ends what it started.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	return r, nil
}

func withoutVar(env []string, name string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// supervisorStarted reads the supervisor's status pipe (its write end
// already closed here): the pid of the process it started, or why it
// could not start it, as starting it directly would have said.
func supervisorStarted(status *os.File, cmd *exec.Cmd) (int, error) {
	cmd.ExtraFiles[0].Close()
	data, _ := io.ReadAll(io.LimitReader(status, 4096))
	status.Close()
	path := cmd.Args[1]
	s := string(data)
	switch {
	case strings.HasPrefix(s, "ok "):
		if pid, err := strconv.Atoi(s[3:]); err == nil {
			return pid, nil
		}
	case strings.HasPrefix(s, "errno "):
		if n, err := strconv.Atoi(s[6:]); err == nil {
			return 0, &os.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(n)}
		}
	case strings.HasPrefix(s, "error "):
		return 0, &os.PathError{Op: "fork/exec", Path: path, Err: errors.New(s[6:])}
	}
	// The supervisor ended before it said (it was killed): its exit is
	// what the wait reports.
	return cmd.Process.Pid, nil
}
