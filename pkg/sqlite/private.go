package sqlite

import (
	"database/sql"
	"strconv"
)

// A replay that keeps nothing (--db :memory:) needs a database only its own
// connection opens, that vanishes with the process, and whose memory does
// not grow with the capture. SQLite's temporary database is exactly that:
// an empty file name opens a private database that lives in the page cache
// and, once it outgrows it, in a file SQLite unlinks as soon as it has
// opened it (so not even kill -9 leaves it behind). The memory is the page
// cache, bounded by cache_size, whatever the length of the log.

func openPrivate(cacheKiB int) (*DB, error) {
	// No lock to wait for and no WAL: nobody else can open this database.
	// Its journal can live in memory: a crash loses the database whatever
	// the journal, and that journal holds only what the open transaction
	// changed in pages older than it (see maxBatchAge), so it stays small.
	// In memory, too, is where the journal of each delivery's savepoint
	// then goes, chunk by chunk, instead of to a file once it outgrows one
	// allocation.
	dsn := "file:?_pragma=cache_size(-" + strconv.Itoa(cacheKiB) + ")&_pragma=journal_mode(MEMORY)&_pragma=temp_store(FILE)"
	d, err := openDSN(dsn, Memory)
	if err != nil {
		return nil, err
	}
	// The anchor is the one connection: another would open a database of
	// its own.
	d.db.SetMaxOpenConns(1)
	d.private = true
	return d, nil
}

// Scratch is a private database (see openPrivate) for what a run must
// keep of millions of deliveries without holding it in memory: a target
// replay keeps its tally of events and keys there. Its memory is the page
// cache, cacheKiB; the rest lives in a file SQLite has already unlinked.
type Scratch struct {
	*sql.Conn // the one connection: the database lives in it
	d         *DB
}

// OpenScratch opens an empty private database.
func OpenScratch(cacheKiB int) (*Scratch, error) {
	d, err := openPrivate(cacheKiB)
	if err != nil {
		return nil, err
	}
	return &Scratch{Conn: d.anchor, d: d}, nil
}

// Close closes the database, and it is gone.
func (s *Scratch) Close() error { return s.d.Close() }
