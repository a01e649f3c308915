package proc

import (
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sysProcAttr puts a started process in a process group of its own (a
// crash or a stop reaches everything it started, and a Ctrl-C at the
// terminal reaches only redeliver, which then stops it), and has the
// kernel kill it when redeliver dies, even by SIGKILL.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// starter is the one OS thread every process is started from. The kernel
// sends the parent-death signal when the thread that started a process
// ends, not the whole program; a goroutine locked to its thread that never
// returns keeps that thread for as long as redeliver runs, where any other
// thread could be ended under it (a goroutine that exits locked takes its
// thread with it).
var starter struct {
	once sync.Once
	reqs chan func()
}

// startCmd starts cmd from the starter thread.
func startCmd(cmd *exec.Cmd) error {
	starter.once.Do(func() {
		starter.reqs = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range starter.reqs {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	starter.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// subreaping is set once this process adopts its descendants' orphans.
var subreaping atomic.Bool

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// Subreap makes redeliver the child subreaper of everything it starts: a
// helper that leaves its consumer's process group (setsid) is reparented
// to redeliver, not to init, when the process that started it dies, and
// EndStrays then stops it. Call it once, at the start of a program whose
// children are all started by this package: every child of the program
// that this package is not running is taken for a stray.
func Subreap() {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno == 0 {
		subreaping.Store(true)
	}
}

// reaping holds the strays being reaped, so two sweeps never wait for the
// same pid (after the first, the pid may be a new child's).
var reaping = map[int]bool{}

// EndStrays kills and reaps the processes reparented to redeliver: what
// the consumers and exec deliveries it started left behind once they
// exited. A stray's own children are reparented in turn when it dies, so
// it looks again until none is left. It does nothing unless Subreap was
// called.
func EndStrays() {
	if !subreaping.Load() {
		return
	}
	for range 100 {
		pids := claimStrays()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			reap(pid)
		}
	}
}

// claimStrays kills the children of redeliver it did not start (or has
// reaped already), except those still in the process group of one it is
// running, and returns them, claimed for reaping.
func claimStrays() []int {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	var pids []int
	for _, pid := range ownChildren() {
		if live[pid] > 0 || reaping[pid] {
			continue
		}
		if p, ok := readProc(pid); ok && live[p.pgrp] > 0 {
			// Orphaned within the group of a process that still runs (each
			// is its group's leader): it goes with that group.
			continue
		}
		reaping[pid] = true
		syscall.Kill(pid, syscall.SIGKILL)
		pids = append(pids, pid)
	}
	return pids
}

// ownChildren lists the children of this process: from each of its
// threads' children file, which is cheap (an orphan is adopted by one of
// the threads), or, where the kernel has none, from every process's stat.
func ownChildren() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err == nil && len(tasks) > 0 {
		var pids []int
		ok := true
		for i, t := range tasks {
			data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
			if err != nil {
				if os.IsNotExist(err) && i == 0 {
					ok = false
					break
				}
				continue // a thread that ended meanwhile
			}
			for _, f := range bytes.Fields(data) {
				if pid, err := strconv.Atoi(string(f)); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		if ok {
			return pids
		}
	}
	self := os.Getpid()
	var pids []int
	for _, p := range listProcs() {
		if p.ppid == self {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// reap waits for a killed stray, a child of redeliver, to exit and
// collects it, so no zombie is left. A process the kernel holds in an
// uninterruptible sleep is given up on after a while; the next sweep
// tries again.
func reap(pid int) {
	defer func() {
		spawnMu.Lock()
		delete(reaping, pid)
		spawnMu.Unlock()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if got == pid || (err != nil && err != syscall.EINTR) || time.Now().After(deadline) {
			return
		}
		time.Sleep(wait)
	}
}

// procID names a process by its pid and its start time, so a pid the
// system gave to another process since is never signalled.
type procID struct {
	pid   int
	start string
}

// procStat is what redeliver reads of a process in /proc/PID/stat.
type procStat struct {
	procID
	ppid, pgrp int
}

// listProcs lists every process the system shows.
func listProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	out := make([]procStat, 0, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out
}

// readProc reads /proc/PID/stat.
func readProc(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(pid, data)
}

// parseStat reads "pid (comm) state ppid pgrp session …", where comm may
// hold spaces and parentheses, so the fields are counted from the last ')'.
func parseStat(pid int, data []byte) (procStat, bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is the state (field 3); starttime is field 22.
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{procID: procID{pid: pid, start: string(f[19])}, ppid: ppid, pgrp: pgrp}, true
}

// leftGroup returns the descendants of the process pid that left its
// process group (pgid pid): a signal to the group does not reach them.
func leftGroup(pid int) []procID {
	var out []procID
	for _, p := range descendants(pid) {
		if p.pgrp != pid {
			out = append(out, p.procID)
		}
	}
	return out
}

// descendants lists every descendant of pid, parents before children.
func descendants(pid int) []procStat {
	children := map[int][]procStat{}
	for _, p := range listProcs() {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []procStat
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// unadopted returns the descendants of pid that left its process group and
// that redeliver will not adopt when they are orphaned: none when it is
// their subreaper (EndStrays ends them then), all of them otherwise.
func unadopted(pid int) []procID {
	if subreaping.Load() {
		return nil
	}
	return leftGroup(pid)
}

// signalLeft sends sig to each process of ids that is still the process
// it was (the same start time).
func signalLeft(ids []procID, sig syscall.Signal) {
	for _, id := range ids {
		if p, ok := readProc(id.pid); ok && p.start == id.start {
			syscall.Kill(id.pid, sig)
		}
	}
}
