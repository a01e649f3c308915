package effects

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// A guardian ends a consumer's MySQL threads should redeliver itself be
// killed (SIGKILL). A MySQL server notices that a thread's client is gone
// only when the thread next writes to its socket or, in SLEEP(), every
// few seconds: a thread waiting on a lock goes on waiting, holding the
// locks its transaction took, until innodb_lock_wait_timeout, and a long
// statement runs to its end. PostgreSQL has client_connection_check_interval
// for this; MySQL has nothing like it. So redeliver, relaying a MySQL
// database, starts a copy of itself in a session of its own and tells it,
// over a pipe, the DSN of the effects database and the thread of each
// connection the proxy relays, as the proxy learns it and forgets it. The
// pipe's end (EOF) without a word before is redeliver's death: the
// guardian sends KILL QUERY to every thread it was told of, then KILL
// CONNECTION, and exits. On a normal end redeliver says "stop" first and
// the guardian exits doing nothing.

// guardianEnv marks a run of redeliver as a guardian; its value is the
// pid of the redeliver that started it.
const guardianEnv = "REDELIVER_INTERNAL_GUARDIAN"

// guardianFd is the read end of the guardian's pipe.
const guardianFd = 3

// guardianKill bounds how long a guardian may take to end the threads.
const guardianKill = 10 * time.Second

// Guardian is a started guardian; nil where there is none (another
// database, or a program that does not run guardians). Its methods may
// be called on nil.
type Guardian struct {
	mu  sync.Mutex
	w   *os.File
	cmd *exec.Cmd
}

// Track tells the guardian of a thread of a connection the proxy relays
// (known) or one known to have ended.
func (g *Guardian) Track(id int32, known bool) {
	if g == nil {
		return
	}
	sign := "-"
	if known {
		sign = "+"
	}
	g.send(sign + strconv.Itoa(int(id)))
}

// send writes a line to the guardian. One that cannot be written (the
// guardian is gone) is dropped: the guardian guards, it never stops a run.
func (g *Guardian) send(line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.w != nil {
		g.w.WriteString(line + "\n")
	}
}

// Stop tells the guardian that redeliver ends normally, and waits for it
// to exit: what the consumer left in the database was ended already.
func (g *Guardian) Stop() {
	if g == nil {
		return
	}
	g.send("stop")
	g.mu.Lock()
	g.w.Close()
	g.w = nil
	g.mu.Unlock()
	g.cmd.Wait()
}

// newGuardian starts cmd, redeliver run again, as the guardian of the
// threads of the effects database d.
func (d *DB) newGuardian(cmd *exec.Cmd) (*Guardian, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// redeliver's own environment never holds guardianEnv: a guardian
	// unsets it.
	cmd.Env = append(os.Environ(), guardianEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = []*os.File{r}
	// Its word, should it fail to end the threads, goes where
	// redeliver's own went.
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("cannot start the guardian of the consumer's MySQL threads: %w", err)
	}
	g := &Guardian{w: w, cmd: cmd}
	g.send(strconv.Quote(d.s.guardianDSN()))
	return g, nil
}

// guard is the guardian's work: it reads its pipe until "stop" (it
// returns 0) or its end, then ends every thread it was told of and not
// told ended.
func guard(pipe *os.File) int {
	lines := bufio.NewScanner(pipe)
	var dsn string
	ids := map[int32]bool{}
	first := true
	for lines.Scan() {
		line := lines.Text()
		if first {
			first = false
			var err error
			if dsn, err = strconv.Unquote(line); err != nil {
				fmt.Fprintf(os.Stderr, "redeliver: the guardian of the consumer's MySQL threads was given no database: %q\n", line)
				return 2
			}
			continue
		}
		if line == "stop" {
			return 0
		}
		if line == "" {
			continue
		}
		id, err := strconv.Atoi(line[1:])
		if err != nil || line[0] != '+' && line[0] != '-' {
			continue
		}
		if line[0] == '+' {
			ids[int32(id)] = true
		} else {
			delete(ids, int32(id))
		}
	}
	if dsn == "" || len(ids) == 0 {
		return 0
	}
	left := make([]int32, 0, len(ids))
	for id := range ids {
		left = append(left, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guardianKill)
	defer cancel()
	db, err := sql.Open("mysql", dsn)
	if err == nil {
		err = (&mySession{server: server{db}}).terminate(ctx, left)
		db.Close()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "redeliver: killed, it could not end its consumer's MySQL threads %s: %v\n", idList(left), oneLine(err))
		return 1
	}
	return 0
}
