//go:build unix

package plainhttp

import (
	"io"
	"net"
	"syscall"

	"github.com/redeliver/redeliver/pkg/rawio"
)

// canPeek: an idle connection's socket can be looked at without reading.
const canPeek = true

// socketOf returns how a connection's requests are written and its answers
// read (with raw system calls where rawio can), and the check of it while
// idle: whether it is still open and has nothing to read. A consumer that
// closed it, or sent something unasked, is not sent the next delivery
// down it.
func socketOf(c net.Conn) (r io.Reader, w io.Writer, idle func() bool) {
	rw := rawio.Conn(c)
	sc, ok := rw.(syscall.Conn)
	if !ok {
		return rw, rw, func() bool { return false }
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return rw, rw, func() bool { return false }
	}
	open := false
	look := func(fd uintptr) bool {
		open = peek(fd)
		return true
	}
	idle = func() bool {
		open = false
		return rc.Read(look) == nil && open
	}
	return rw, rw, idle
}
