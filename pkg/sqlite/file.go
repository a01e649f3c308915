package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/redeliver/redeliver/pkg/escape"
)

// A --db file is the user's file system: redeliver only ever writes, empties
// or resumes a regular file that is empty or that it made itself, and only
// while it holds an exclusive lock on it. Anything else — a device, a FIFO,
// a symbolic link, another program's database, a URI — is refused before
// a byte of it is written.

// ErrNotOurs is returned when a file to be replaced is not a redeliver database.
var ErrNotOurs = errors.New("not a redeliver database")

// ErrNotRegular is returned when --db names something other than a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrInUse is returned when another redeliver holds the database.
var ErrInUse = errors.New("in use by another redeliver")

// ErrBadPath is returned for a --db that is not a plain file path.
var ErrBadPath = errors.New("not a plain file path")

// fileLock is the exclusive lock a process holds on its database file for
// as long as it uses it.
type fileLock struct {
	f       *os.File
	path    string
	created bool
}

// checkPath refuses what is not a plain path to a regular file (or to
// nothing yet).
func checkPath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("the database path is empty: %w", ErrBadPath)
	case strings.HasPrefix(path, "file:"):
		return fmt.Errorf("--db %s is a URI, %w; give the path of the file", quote(path), ErrBadPath)
	case strings.ContainsAny(path, "?#"):
		return fmt.Errorf("--db %s holds ? or #, %w; give the path of the file", quote(path), ErrBadPath)
	}
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		kind := "a special file"
		switch {
		case st.IsDir():
			kind = "a directory"
		case st.Mode()&os.ModeSymlink != 0:
			kind = "a symbolic link"
		case st.Mode()&os.ModeNamedPipe != 0:
			kind = "a FIFO"
		case st.Mode()&os.ModeDevice != 0:
			kind = "a device"
		case st.Mode()&os.ModeSocket != 0:
			kind = "a socket"
		}
		return fmt.Errorf("%s is %s, %w; redeliver only writes its own database files (choose another --db path)", quote(path), kind, ErrNotRegular)
	}
	return nil
}

// lockFile opens path (creating an empty file if there is none) and takes
// an exclusive lock on it, refusing anything but a regular file and a file
// another redeliver holds.
func lockFile(path string) (*fileLock, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	_, err := os.Lstat(path)
	created := errors.Is(err, os.ErrNotExist)
	f, err := openNoFollow(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", quote(path), err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %w; redeliver only writes its own database files (choose another --db path)", quote(path), ErrNotRegular)
	}
	if err := flockExclusive(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is %w (wait for it to finish, or choose another --db path)", quote(path), ErrInUse)
	}
	return &fileLock{f: f, path: path, created: created}, nil
}

// release drops the lock; a file this process created and never wrote is removed.
func (l *fileLock) release() {
	if l == nil || l.f == nil {
		return
	}
	if st, err := l.f.Stat(); err == nil && l.created && st.Size() == 0 {
		os.Remove(l.path)
	}
	l.f.Close()
	l.f = nil
}

// size is the locked file's size.
func (l *fileLock) size() (int64, error) {
	st, err := l.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readMeta reads redeliver_meta from the SQLite file at path without
// writing to it or creating anything beside it. ours is false for a file
// that is not a SQLite database or has no redeliver_meta table.
func readMeta(ctx context.Context, path string) (meta map[string]string, ours bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	head := make([]byte, 100)
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil || string(head[:16]) != "SQLite format 3\x00" {
		return nil, false, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, false, err
	}
	uri := "file:" + strings.ReplaceAll(filepath.ToSlash(abs), "%", "%25")
	// A WAL database without its -wal file holds everything in the main
	// file, and immutable reads it without making -wal and -shm files; a
	// -wal left by a killed run holds committed work, so that one is read
	// through SQLite's read-only mode.
	walMode := head[18] == 2 && head[19] == 2
	if _, err := os.Lstat(path + "-wal"); walMode && err == nil {
		uri += "?mode=ro"
	} else {
		uri += "?mode=ro&immutable=1"
	}
	db, err := sql.Open("sqlite", uri)
	if err != nil {
		return nil, false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	rows, err := db.QueryContext(ctx, `SELECT key, value FROM redeliver_meta`)
	if err != nil {
		return nil, false, nil
	}
	defer rows.Close()
	meta = map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, false, nil
		}
		meta[k] = v
	}
	if rows.Err() != nil || meta["strategy"] == "" {
		return nil, false, nil
	}
	return meta, true, nil
}

// removeSidecars removes the -wal and -shm files an earlier run of ours
// left, so that an emptied database starts clean. Only regular files are
// removed.
func removeSidecars(path string) error {
	for _, suffix := range []string{"-wal", "-shm"} {
		st, err := os.Lstat(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s is %w; redeliver will not touch it (choose another --db path)", quote(path+suffix), ErrNotRegular)
		}
		if err := os.Remove(path + suffix); err != nil {
			return err
		}
	}
	return nil
}

// quote writes a path that came from the user the way every message does:
// as is when it is plain, escaped when it holds anything that could
// disturb a terminal or a log.
func quote(s string) string { return escape.Input(s) }
