//go:build unix && !darwin && !ios

package bench

import (
	"os"
	"syscall"
)

// MaxRSSKiB is the peak resident memory of the process that ended with ps,
// in KiB (0 when it is not known).
func MaxRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss) // KiB on Linux and the BSDs
	}
	return 0
}
