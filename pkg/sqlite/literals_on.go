//go:build !noliterals

package sqlite

// literalMax: see literalChanges.
const literalMax = 8
