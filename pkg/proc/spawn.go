package proc

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// outputGrace is how long redeliver reads a process's stdout and stderr
// after it exited and what it left was stopped. Its pipes then close at
// once; only a descendant redeliver could not find (one that left the
// process group where there is no subreaper) still holds them, and it is
// not waited for longer.
const outputGrace = time.Second

// spawnMu is held while a process is started and registered, and while
// strays are looked for, so a child just started is never taken for one.
var spawnMu sync.Mutex

// live counts the processes this package started and has not reaped yet,
// by pid: a child of redeliver that is not among them is a stray.
var live = map[int]int{}

// Child is one process redeliver started — a consumer, or an exec
// target's delivery — in a process group of its own, its stdout and
// stderr read through pipes redeliver owns.
type Child struct {
	// pid is the started process's: cmd's, or the one its supervisor
	// started in its process group (see Supervise).
	pid     int
	cmd     *exec.Cmd
	pipes   []*os.File // the read ends
	readers sync.WaitGroup
}

// SupervisorProgramEnv, when set, names the program run as the supervisor
// on Linux in place of redeliver itself: one whose main calls Supervise first
// (pkg/proc/internal/supervisor, which the end-to-end tests build, since
// the race-enabled test binaries they run as redeliver are several times
// slower to start).
const SupervisorProgramEnv = "REDELIVER_INTERNAL_SUPERVISOR_PROGRAM"

// Spawn starts cmd with stdout and stderr (each may be nil) reading its
// output until it ends. A process that leaves a descendant holding the
// pipes does not make redeliver wait for it.
func Spawn(cmd *exec.Cmd, stdout, stderr func(io.Reader)) (*Child, error) {
	return spawnAs(cmd, supervised.Load(), stdout, stderr)
}

// spawnAs is Spawn, through a supervisor or not.
func spawnAs(cmd *exec.Cmd, supervise bool, stdout, stderr func(io.Reader)) (*Child, error) {
	c := &Child{cmd: cmd}
	cmd.SysProcAttr = sysProcAttr()
	// A stray holding the read end of stdin cannot hold Wait either.
	cmd.WaitDelay = outputGrace
	writeEnds, err := c.outputs(stdout, stderr)
	if err != nil {
		return nil, err
	}
	closeAll := func() {
		for _, w := range writeEnds {
			w.Close()
		}
	}
	var status *os.File
	if supervise {
		status, err = superviseCmd(cmd)
	}
	if err != nil {
		closeAll()
		c.closePipes()
		c.readers.Wait()
		return nil, err
	}
	spawnMu.Lock()
	err = startCmd(cmd)
	if err == nil {
		live[cmd.Process.Pid]++
	}
	spawnMu.Unlock()
	// The child has its own copies; redeliver keeps only the read ends,
	// so they reach the end when every writer is gone.
	closeAll()
	if status != nil {
		if err != nil {
			status.Close()
			cmd.ExtraFiles[0].Close()
		} else if c.pid, err = supervisorStarted(status, cmd); err != nil {
			// The supervisor could not start the process and exits.
			cmd.Wait()
			unregister(cmd.Process.Pid)
		}
	} else if err == nil {
		c.pid = cmd.Process.Pid
	}
	if err != nil {
		c.closePipes()
		c.readers.Wait()
		return nil, err
	}
	return c, nil
}

// outputs gives the command a pipe for each of stdout and stderr that has
// a reader, each read in a goroutine of its own until it ends, and
// returns the write ends; on an error none is left open.
func (c *Child) outputs(stdout, stderr func(io.Reader)) ([]*os.File, error) {
	var writeEnds []*os.File
	for _, o := range []struct {
		read func(io.Reader)
		to   *io.Writer
	}{{stdout, &c.cmd.Stdout}, {stderr, &c.cmd.Stderr}} {
		if o.read == nil {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			for _, w := range writeEnds {
				w.Close()
			}
			c.closePipes()
			return nil, err
		}
		c.pipes = append(c.pipes, r)
		writeEnds = append(writeEnds, w)
		*o.to = w
		c.readers.Add(1)
		go func() {
			defer c.readers.Done()
			o.read(r)
			// Whatever the reader left is drained, so the writer never blocks.
			io.Copy(io.Discard, r)
		}()
	}
	return writeEnds, nil
}

// unregister forgets a started process once it was waited for.
func unregister(pid int) {
	spawnMu.Lock()
	if live[pid]--; live[pid] <= 0 {
		delete(live, pid)
	}
	spawnMu.Unlock()
}

// Wait waits for the process to exit, then ends what it left: the rest of
// its process group, and the descendants that left the group and were
// reparented to redeliver. It returns once its output is read.
func (c *Child) Wait() error {
	err := c.cmd.Wait()
	pid := c.cmd.Process.Pid
	signalGroup(pid, sigKill)
	unregister(pid)
	EndStrays()
	done := make(chan struct{})
	go func() { c.readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
		c.closePipes()
		<-done
	}
	c.closePipes()
	return err
}

// Kill sends SIGKILL to the process group, and to the descendants that
// left it; Wait then returns.
func (c *Child) Kill() {
	pid := c.cmd.Process.Pid
	left := unadopted(pid)
	signalGroup(pid, sigKill)
	signalLeft(left, sigKill)
}

func (c *Child) closePipes() {
	for _, r := range c.pipes {
		r.Close()
	}
}
