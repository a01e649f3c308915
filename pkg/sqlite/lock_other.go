//go:build !unix

package sqlite

import "os"

// openNoFollow opens path for reading and writing, creating it if it does
// not exist.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}

// flockExclusive is not available here: the file is not locked.
func flockExclusive(*os.File) error { return nil }
