package proc

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Which started instance owns a connection to the database proxy. Behind
// a broker with several instances, the one to kill at a statement
// boundary is the one whose process holds the client end of the held
// connection: the proxy hands each connection it accepts to
// Owners.Resolve, which finds the socket's inode in the kernel's TCP
// table (its local end is the connection's client address, its remote
// end the proxy's), the process among redeliver's descendants that holds
// a file descriptor on that inode, and the started instance whose
// process is that one or an ancestor of it.

// Owners maps the proxy's connections to the started instances.
type Owners struct {
	mu    sync.Mutex
	procs []*Process // instance i+1 is procs[i]
	// self is the process whose descendants are searched (redeliver).
	self int
}

// ownerRetry and ownerPatience bound how long a connection whose process
// is no started instance's yet — an instance still starting, not yet
// registered — is looked at again.
const (
	ownerRetry    = 25 * time.Millisecond
	ownerPatience = 2 * time.Minute
)

// NewOwners maps the connections of the descendants of self (redeliver's
// own pid) to the instances registered.
func NewOwners(self int) *Owners { return &Owners{self: self} }

// Register notes a started instance; its number is its place (1, 2, …).
func (o *Owners) Register(p *Process) {
	o.mu.Lock()
	o.procs = append(o.procs, p)
	o.mu.Unlock()
}

// Resolve is the proxy's owner function: the instance (1, 2, …) whose
// process holds the client end of a connection, or 0 when it is not
// known (not on Linux, a process redeliver did not start, the
// connection gone before it was seen).
func (o *Owners) Resolve(ctx context.Context, client, proxy netip.AddrPort) int {
	chain, err := socketOwner(client, proxy, o.self)
	if err != nil || len(chain) == 0 {
		return 0
	}
	limit := time.Now().Add(ownerPatience)
	for {
		if i := o.instanceOf(chain); i > 0 {
			return i
		}
		if time.Now().After(limit) {
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(ownerRetry):
		}
	}
}

// instanceOf is the instance whose process is the nearest of chain (a
// process and its ancestors, nearest first), or 0.
func (o *Owners) instanceOf(chain []int) int {
	o.mu.Lock()
	procs := append([]*Process(nil), o.procs...)
	o.mu.Unlock()
	for _, pid := range chain {
		for i, p := range procs {
			if own, group := p.pids(); pid == own || pid == group {
				return i + 1
			}
		}
	}
	return 0
}

// Holder is the instance (1, 2, …) of procs whose process holds the
// client end of the TCP connection from client to server, as a proxy
// connection's owner is found (see Owners), or 0 when none does.
func Holder(procs []*Process, client, server netip.AddrPort) int {
	chain, err := socketOwner(client, server, os.Getpid())
	if err != nil {
		return 0
	}
	o := Owners{procs: procs}
	return o.instanceOf(chain)
}

// pids are the consumer's own process and the one redeliver started
// (its supervisor, on Linux), 0 before it started.
func (p *Process) pids() (own, group int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		group = p.cmd.Process.Pid
	}
	return p.pid, group
}

// parseSocketLine reads one line of the kernel's TCP table
// (/proc/net/tcp or /proc/net/tcp6): its local and remote addresses and
// the socket's inode. The header line, and any line not of that form,
// is not ok.
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
//	 0: 0100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 51234 …
func parseSocketLine(line string) (local, remote netip.AddrPort, inode uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 10 || !strings.HasSuffix(f[0], ":") {
		return local, remote, 0, false
	}
	if local, ok = hexAddrPort(f[1]); !ok {
		return local, remote, 0, false
	}
	if remote, ok = hexAddrPort(f[2]); !ok {
		return local, remote, 0, false
	}
	inode, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return local, remote, 0, false
	}
	return local, remote, inode, true
}

// hexAddrPort reads an address of the kernel's TCP table: the address in
// hex, as 32-bit words in the machine's byte order (8 digits for IPv4,
// 32 for IPv6), a colon, the port in hex.
func hexAddrPort(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw, err := hex.DecodeString(a)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), true
}
