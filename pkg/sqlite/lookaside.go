//go:build !nolookaside

package sqlite

import (
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Every connection's lookaside: the slots of its own SQLite allocates its
// small objects from (a statement's cursors, a record being built)
// without the process-wide allocator and its one lock. SQLite's default,
// 40 slots of 1200 bytes (123 once split into large and small ones), is
// taken up by the replay store's prepared statements, which keep theirs
// while prepared; every cursor of every statement run then took the
// allocator's lock, which the parts of a split replay contend for. 200
// slots (240 KB a connection, 610 once split) leave room to spare:
// TestLookasideHoldsTheReplay.
const (
	lookasideSlotSize = 1200
	lookasideSlots    = 200
)

// init sets the lookaside of the connections SQLite opens; it must run
// before the first one is opened (sqlite3_config is refused after SQLite
// initialises itself, and then the default stands).
func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.NewVaList(int32(lookasideSlotSize), int32(lookasideSlots))
	if va == 0 {
		return
	}
	defer libc.Xfree(tls, va)
	sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_LOOKASIDE, va)
}
