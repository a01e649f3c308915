//go:build unix

package external

import (
	"net"
	"syscall"
)

// canPeek: an idle connection's socket can be looked at without reading.
const canPeek = true

// idleOpen reports whether an idle connection is still open and has
// nothing to read: a consumer that closed it, or sent something unasked,
// is not sent the next delivery down it.
func idleOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && open
}
