//go:build !linux

package effects

// RunGuardian does nothing here: guardians run on Linux only, where
// redeliver can run itself again (/proc/self/exe).
func RunGuardian() (int, bool) { return 0, false }

// StartGuardian starts no guardian here (see RunGuardian).
func (d *DB) StartGuardian() (*Guardian, error) { return nil, nil }
