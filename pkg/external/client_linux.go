package external

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// peek says whether an idle socket is open with nothing to read.
func peek(fd uintptr) bool {
	var b [1]byte
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno == syscall.EAGAIN
}

// socketIO reads and writes a connection's socket with system calls the Go
// scheduler is not told of (syscall.RawSyscall), waiting in the network
// poller as net.Conn does when the socket has nothing to read or no room.
// The socket is non-blocking, so neither call blocks. A delivery's side is
// a write and a read or two while the consumer works; each system call
// made the ordinary way lets the runtime's monitor take the one processor
// from a call it finds in progress and wake another thread for it, which
// cost more than the calls (the context switches per delivery fell from
// about three to one without). Errors read as net.Conn's do.
func socketIO(c net.Conn, rc syscall.RawConn) (io.Reader, io.Writer) {
	s := &sockIO{c: c, rc: rc}
	return s, s
}

type sockIO struct {
	c  net.Conn
	rc syscall.RawConn
}

func (s *sockIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case errno != 0:
		return 0, s.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (s *sockIO) Write(b []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := s.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			w, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(w)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, s.opError("write", err)
	case errno != 0:
		return n, s.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError is err as net.Conn's Read or Write gives it: the poller's own
// (a deadline passed, the connection closed) unwrapped from the raw call's.
func (s *sockIO) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.c.LocalAddr(), Addr: s.c.RemoteAddr(), Err: err}
}
