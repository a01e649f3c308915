//go:build !unix

package bench

import "os"

// MaxRSSKiB is 0 here: the peak resident memory of a process is read from
// its rusage, which only Unix systems give; the comparison reports 0 MB.
func MaxRSSKiB(*os.ProcessState) int64 { return 0 }
