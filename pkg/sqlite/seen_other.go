//go:build !unix

package sqlite

// words returns n zeroed words.
func words(n int) ([]uint64, func()) { return make([]uint64, n), nil }
