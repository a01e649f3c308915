//go:build unix

package sqlite

import (
	"syscall"
	"unsafe"
)

// words returns n zeroed words outside the Go heap: the filter is as large
// as the rest of a replay's Go memory, and in the heap it would raise the
// collector's goal (five times the live heap during a replay) by five
// times its size.
func words(n int) ([]uint64, func()) {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint64, n), nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), n), func() { syscall.Munmap(b) }
}
