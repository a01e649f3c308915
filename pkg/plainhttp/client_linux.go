package plainhttp

import (
	"syscall"
	"unsafe"
)

// peek says whether an idle socket is open with nothing to read; made as
// a raw system call, as the connection's reads and writes are (pkg/rawio).
func peek(fd uintptr) bool {
	var b [1]byte
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno == syscall.EAGAIN
}
