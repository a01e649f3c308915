package external

import (
	"context"
	"fmt"
	"time"

	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// backendGrace is how long a cancelled server process of a killed
// consumer may take to end before it is terminated.
const backendGrace = time.Second

// endBackends ends the server processes a dead consumer left busy
// behind the effects proxy, those whose client connection closed — still running a query (a pg_sleep, one that
// ignores its closed socket) or inside a transaction — as a real crash
// would have: each is cancelled, and terminated if it is still there
// after backendGrace (a MySQL thread, which has no cancel, is killed at
// once), so that the server rolls back what it held. It is
// called once no process of the consumer that used them is alive: after
// a kill, and when the session closes. It returns the processes it could
// not end.
func (s *Session) endBackends(ctx context.Context) ([]int32, error) {
	if s.proxy == nil {
		return nil, nil
	}
	busy, byPID, err := s.busyBackends(ctx)
	if err != nil {
		return nil, err
	}
	var orphans []int32
	for _, pid := range busy {
		if !byPID[pid].Open {
			orphans = append(orphans, pid)
		}
	}
	if len(orphans) == 0 {
		return nil, nil
	}
	left := orphans
	if !s.proxy.MySQL() {
		// MySQL has no cancel request: its threads are killed at once,
		// which rolls back as soon.
		for _, pid := range orphans {
			s.proxy.Cancel(ctx, byPID[pid])
		}
		if left, err = s.waitEnded(ctx, orphans, backendGrace); err != nil || len(left) == 0 {
			return left, err
		}
	}
	if err := s.db.Terminate(ctx, left); err != nil {
		return left, fmt.Errorf("cannot terminate the consumer's database backends %v: %w", left, err)
	}
	return s.waitEnded(ctx, left, 2*time.Second)
}

// busyBackends returns the server processes behind the proxy that are
// busy, and the backends it listed by PID, once none of the busy ones
// still has its client connection open, or after ten more looks; the
// proxy forgets those that are not busy.
func (s *Session) busyBackends(ctx context.Context) ([]int32, map[int32]sqlproxy.Backend, error) {
	byPID := map[int32]sqlproxy.Backend{}
	// The proxy sees a dead client's sockets close a moment after its
	// death: a busy process whose client connection is still open is
	// looked at again, for a while, before it is taken for a living
	// instance's.
	for wait := 0; ; wait++ {
		all := s.proxy.Backends()
		if len(all) == 0 {
			return nil, nil, nil
		}
		pids := make([]int32, len(all))
		for i, b := range all {
			pids[i], byPID[b.PID] = b.PID, b
		}
		busy, err := s.db.Busy(ctx, pids)
		if err != nil {
			return nil, nil, err
		}
		s.proxy.Forget(without(pids, busy))
		open := 0
		for _, pid := range busy {
			if byPID[pid].Open {
				open++
			}
		}
		if open == 0 || wait == 10 {
			return busy, byPID, nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, nil, err
		}
	}
}

// waitEnded waits up to d until none of pids is busy, and returns those
// that still are.
func (s *Session) waitEnded(ctx context.Context, pids []int32, d time.Duration) ([]int32, error) {
	deadline := time.Now().Add(d)
	for {
		busy, err := s.db.Busy(ctx, pids)
		if err != nil || len(busy) == 0 || time.Now().After(deadline) {
			s.proxy.Forget(without(pids, busy))
			return busy, err
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return busy, err
		}
		pids = busy
	}
}

// without is xs less those in ys.
func without(xs, ys []int32) []int32 {
	drop := map[int32]bool{}
	for _, y := range ys {
		drop[y] = true
	}
	var out []int32
	for _, x := range xs {
		if !drop[x] {
			out = append(out, x)
		}
	}
	return out
}
