//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// openNoFollow opens path for reading and writing, creating it if it does
// not exist, without following a symbolic link and without blocking on a
// FIFO put there in the meantime.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
}

// flockExclusive takes an exclusive flock on f, failing at once if another
// open file holds one. flock locks are apart from the POSIX locks SQLite
// takes, so they do not disturb its own locking.
func flockExclusive(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
