//go:build noliterals

package sqlite

// literalMax: built with -tags noliterals, no literals (literalChanges).
const literalMax = 0
