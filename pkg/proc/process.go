package proc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// StopGrace is how long a started consumer has to exit after SIGTERM
// before its process group is killed (the reports word it too).
const StopGrace = consumer.StopGrace

// tailLines is how many of the consumer's last stderr lines an error shows.
const tailLines = 10

// StderrIntro introduces the consumer's last stderr lines in an error;
// the lines are quoted as escape.Message shows them.
const StderrIntro = "; its last stderr lines:" + escape.QuoteSep

// Tail keeps the last lines written to it (a started process's stderr).
type Tail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	if len(t.part) > 4096 {
		t.part = t.part[:4096]
	}
	for _, l := range parts[:len(parts)-1] {
		t.lines = append(t.lines, strings.TrimRight(l, "\r"))
	}
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
	return len(p), nil
}

// Last is StderrIntro and the lines kept, or "" when none was written.
func (t *Tail) Last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := append([]string(nil), t.lines...)
	if t.part != "" {
		lines = append(lines, t.part)
	}
	if len(lines) == 0 {
		return ""
	}
	return StderrIntro + strings.Join(lines, escape.QuoteSep)
}

// Process is a consumer redeliver started: it can be crashed (SIGKILL to
// its process group) and restarted, and is stopped at the end.
type Process struct {
	spec *scenario.Start
	// Started counts the starts, the first one included.
	Started int
	// Dead, when set, is called after a kill, before the consumer starts
	// again: what the dead one left (its database backends) is ended
	// before the new one starts.
	Dead func(ctx context.Context)
	// logs, when set, keeps the output of each start; instance is this
	// instance's number (1, 2, …) in its file names.
	logs     *ConsumerLogs
	instance int

	mu  sync.Mutex
	cmd *exec.Cmd
	// pid is the consumer's own (its supervisor's child, on Linux).
	pid     int
	done    chan struct{} // closed when the current process has exited
	waitErr error
	killing bool // an exit now is one redeliver caused
	stopped bool // Stop ended the current process: a second Stop has nothing to do
	stderr  *Tail
	ready   chan struct{} // closed when the ready line was printed
}

// ConsumerError is a started consumer that failed: it could not start,
// exited before it was ready or by itself, or never became ready.
type ConsumerError struct{ Msg string }

func (e *ConsumerError) Error() string { return e.Msg }

// Start starts the consumer and waits until it is ready.
func Start(ctx context.Context, spec *scenario.Start) (*Process, error) {
	return StartInstance(ctx, spec, nil, 1)
}

// StartInstance is Start, keeping the output of instance (1, 2, …) in
// logs when they are set.
func StartInstance(ctx context.Context, spec *scenario.Start, logs *ConsumerLogs, instance int) (*Process, error) {
	p := &Process{spec: spec, logs: logs, instance: instance}
	if err := p.start(ctx); err != nil {
		// Interrupted while waiting, or exited leaving children: nothing
		// of it stays behind.
		p.Stop()
		return nil, err
	}
	return p, nil
}

// RefuseIfAnswered refuses to start a consumer whose ready check (a URL or
// a TCP address) already answers: another process holds it, perhaps a
// consumer left from an earlier run, and it would answer for the one
// redeliver starts, and take its deliveries.
func RefuseIfAnswered(ctx context.Context, spec *scenario.Start) error {
	if spec.ReadyLine != "" {
		return nil
	}
	p := &Process{spec: spec}
	if !p.probe(ctx, readyClient()) {
		return nil
	}
	return &ConsumerError{fmt.Sprintf("the ready check already answers at %s before the consumer was started: another process (perhaps one left from an earlier run) holds it; stop it first", p.readyWhat())}
}

func readyClient() *http.Client {
	return &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
}

// Command is the consumer's command line, for messages, its secrets
// masked (redact.Args).
func (p *Process) Command() string { return CommandLine(p.spec.Command, p.spec.Shown) }

// CommandLine is a command for messages: as the file showed it (its
// secret variables masked) when it is known, its secrets masked.
func CommandLine(command, shown []string) string {
	if len(shown) == len(command) {
		return redact.Args(shown)
	}
	return redact.Args(command)
}

// Pid is the current consumer's process id.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

func (p *Process) start(ctx context.Context) error {
	cmd := exec.Command(Program(p.spec.Command[0]), p.spec.Command[1:]...)
	cmd.Dir = p.spec.Dir
	cmd.Env = Environ(p.spec.Env)
	st := &Tail{}
	ready := make(chan struct{})
	var lf *logFile
	if p.logs != nil {
		var err error
		if lf, err = p.logs.open(p.instance, p.Started+1, cmd.Env); err != nil {
			return &ConsumerError{fmt.Sprintf("cannot keep the output of the consumer %s in %s: %v", p.Command(), p.logs.Dir, UnwrapExec(err))}
		}
	}
	c, err := Spawn(cmd,
		func(r io.Reader) { p.watchStdout(r, ready, lf) },
		func(r io.Reader) {
			if lf == nil {
				io.Copy(st, r)
				return
			}
			w := &lines{to: lf, stream: "stderr"}
			io.Copy(io.MultiWriter(st, w), r)
			w.end()
		})
	if err != nil {
		lf.close()
		return &ConsumerError{fmt.Sprintf("cannot start the consumer %s: %v", p.Command(), UnwrapExec(err))}
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.pid, p.done, p.stderr, p.ready, p.killing, p.stopped, p.waitErr = cmd, c.pid, done, st, ready, false, false, nil
	p.Started++
	p.mu.Unlock()
	go func() {
		// Once the consumer exits, what it left is stopped and its
		// stderr read to the end.
		err := c.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return p.waitReady(ctx)
}

// watchStdout reads the consumer's stdout, watching for the ready line,
// and keeps each line in lf when it is set.
func (p *Process) watchStdout(r io.Reader, ready chan struct{}, lf *logFile) {
	defer lf.ended()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := false
	for sc.Scan() {
		lf.line("stdout", sc.Text())
		if !seen && p.spec.ReadyLine != "" && strings.Contains(sc.Text(), p.spec.ReadyLine) {
			seen = true
			close(ready)
		}
	}
}

// waitReady waits until the consumer is ready, exits, or the ready
// timeout passes.
func (p *Process) waitReady(ctx context.Context) error {
	deadline := time.NewTimer(p.spec.ReadyTimeout)
	defer deadline.Stop()
	p.mu.Lock()
	done, ready := p.done, p.ready
	p.mu.Unlock()
	poll := 10 * time.Millisecond
	client := readyClient()
	for {
		if p.spec.ReadyLine == "" && p.probe(ctx, client) {
			return nil
		}
		select {
		case <-ready:
			return nil
		case <-done:
			return &ConsumerError{fmt.Sprintf("the consumer %s exited (%s) before it was ready%s", p.Command(), p.exitStatus(), p.stderr.Last())}
		case <-deadline.C:
			p.kill()
			return &ConsumerError{fmt.Sprintf("the consumer %s was not ready at %s within %s%s", p.Command(), p.readyWhat(), p.spec.ReadyTimeout, p.stderr.Last())}
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
		poll = min(poll*2, 100*time.Millisecond)
	}
}

func (p *Process) readyWhat() string {
	switch {
	case p.spec.ReadyURL != "":
		return redact.String(p.spec.ReadyURL)
	case p.spec.ReadyTCP != "":
		return "tcp://" + p.spec.ReadyTCP
	}
	return fmt.Sprintf("its stdout (a line containing %q)", p.spec.ReadyLine)
}

func (p *Process) probe(ctx context.Context, client *http.Client) bool {
	if p.spec.ReadyTCP != "" {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", p.spec.ReadyTCP)
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.spec.ReadyURL, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

func (p *Process) exitStatus() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ProcessState.String()
	}
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// Exited waits up to d for the current process to exit, and reports
// whether it has: a connection reset may arrive before the exit is seen.
func (p *Process) Exited(d time.Duration) bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// pfExiting is the flag of a Linux task that is exiting.
const pfExiting = 0x4

// Exiting reports whether the current process is exiting or has exited,
// as /proc shows it; known is false where there is no /proc. A process
// that dies resets its connections while it exits, before its exit can
// be waited for.
func (p *Process) Exiting() (exiting, known bool) {
	pid := p.Pid()
	if pid == 0 {
		return false, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return false, false
		}
		return true, true // gone already
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags …; comm may
	// hold spaces and parentheses: read after the last one.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 {
		return false, false
	}
	if f[0] == "Z" || f[0] == "X" {
		return true, true
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return false, false
	}
	return flags&pfExiting != 0, true
}

// DiedByItself reports whether the consumer has exited without redeliver
// killing it, and returns the sentence that says so.
func (p *Process) DiedByItself() (bool, string) {
	p.mu.Lock()
	done, killing := p.done, p.killing
	p.mu.Unlock()
	select {
	case <-done:
	default:
		return false, ""
	}
	if killing {
		return false, ""
	}
	return true, fmt.Sprintf("the consumer %s exited by itself (%s)%s", p.Command(), p.exitStatus(), p.stderr.Last())
}

// kill sends SIGKILL to the process group, and to the descendants that
// left it, and waits for the exit.
func (p *Process) kill() {
	p.mu.Lock()
	p.killing = true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	left := unadopted(cmd.Process.Pid)
	signalGroup(cmd.Process.Pid, sigKill)
	signalLeft(left, sigKill)
	<-done
}

// Crash kills the consumer's process group (kill -9), starts it again
// and waits until it is ready.
func (p *Process) Crash(ctx context.Context) error {
	p.kill()
	p.buried(ctx)
	return p.start(ctx)
}

// Running reports whether the current process has not exited.
func (p *Process) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Kill kills the consumer's process group (kill -9) without restarting.
func (p *Process) Kill() { p.kill() }

// Restart starts the consumer again after Kill and waits until it is ready.
func (p *Process) Restart(ctx context.Context) error {
	p.buried(ctx)
	return p.start(ctx)
}

// buried calls Dead, if it is set.
func (p *Process) buried(ctx context.Context) {
	if p.Dead != nil {
		p.Dead(ctx)
	}
}

// Stop ends the consumer: SIGTERM to its process group and to the
// descendants that left it, then SIGKILL after StopGrace. Whatever is
// left of them once the consumer exited is killed too. A process Stop
// ended already is not signalled again: its group id may be another's by
// now. overran says the consumer did not exit within StopGrace of its
// SIGTERM, and was killed.
func (p *Process) Stop() (overran bool) {
	p.mu.Lock()
	p.killing = true
	cmd, done, stopped := p.cmd, p.done, p.stopped
	p.stopped = true
	p.mu.Unlock()
	if cmd == nil || done == nil || stopped {
		return false
	}
	pgid := cmd.Process.Pid
	left := leftGroup(pgid)
	signalGroup(pgid, sigTerm)
	signalLeft(left, sigTerm)
	select {
	case <-done:
	case <-time.After(StopGrace):
		signalGroup(pgid, sigKill)
		<-done
		overran = true
	}
	// Descendants that outlived the consumer go with it: those in its
	// group went when it exited, and those redeliver adopted too; these
	// are the ones it could not adopt.
	signalLeft(left, sigKill)
	return overran
}
