package external

import (
	"fmt"
	"os"
	"time"

	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/standin"
)

// ownerWait bounds how long a kill waits for the owner of the held
// connection to be known: it is looked up when the connection is made.
const ownerWait = 2 * time.Second

// holder is the instance that owns the connection a watch holds: the
// one there is with one instance, else the one whose process holds its
// client end; nil with the number of instances when that is not known.
func (s *Session) holder(w *sqlproxy.Watch) *proc.Process {
	if len(s.procs) <= 1 {
		return s.proc
	}
	hit := w.Hit()
	if hit == nil {
		return nil
	}
	if i := s.proxy.Owner(hit.Conn, ownerWait); i > 0 && i <= len(s.procs) {
		return s.procs[i-1]
	}
	return nil
}

// ownConnections has the proxy tell which started instance owns each
// connection, for a broker target with several instances: the one to
// kill at a statement boundary, the one a trace names.
func (s *Session) ownConnections(t *scenario.Target) {
	if t.Broker == nil || t.Start == nil || t.Start.Instances < 2 {
		return
	}
	s.own = proc.NewOwners(os.Getpid())
	s.proxy.Owners(s.own.Resolve)
}

// unowned is the error of a kill at a boundary whose connection no
// started instance could be found to own: killing one at random would
// claim a kill where none landed.
func (s *Session) unowned() error {
	return fmt.Errorf("redeliver could not tell which of the %d instances holds the connection held at the boundary (no process it started holds its client end, as /proc shows), so it killed none", len(s.procs))
}

// caller is the started instance that made a held call to an external's
// stand-in: the one there is with one instance, else the one whose
// process holds the client end of the call's connection (found as a
// proxy connection's owner is); nil when no started instance does.
func (s *Session) caller(h *standin.Hold) *proc.Process {
	if len(s.procs) <= 1 {
		return s.proc
	}
	client, server := h.Conn()
	if !client.IsValid() || !server.IsValid() {
		return nil
	}
	if i := proc.Holder(s.procs, client, server); i > 0 {
		return s.procs[i-1]
	}
	return nil
}

// callUnowned is the error of a crash at a call that no started
// instance could be found to have made.
func (s *Session) callUnowned(c standin.Call) error {
	return fmt.Errorf("redeliver could not tell which of the %d instances made the call %s %s to %s held for the crash (no process it started holds its client end, as /proc shows), so it killed none", len(s.procs), c.Method, c.Path, c.External)
}
