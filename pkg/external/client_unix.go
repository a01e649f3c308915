//go:build unix

package external

import (
	"net"
	"syscall"
)

// canPeek: an idle connection's socket can be looked at without reading.
const canPeek = true

// idleCheck returns the check of an idle connection: whether it is still
// open and has nothing to read. A consumer that closed it, or sent
// something unasked, is not sent the next delivery down it.
func idleCheck(c net.Conn) func() bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return func() bool { return false }
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() bool { return false }
	}
	var b [1]byte
	open := false
	peek := func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	}
	return func() bool {
		open = false
		return rc.Read(peek) == nil && open
	}
}
