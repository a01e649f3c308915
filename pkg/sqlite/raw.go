package sqlite

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// The replay store's statements run millions of times, each on the
// SQLite connection under the driver's, through the C API itself: the
// driver, per statement, asks SQLite each parameter's name to find its
// value, copies each text into memory it allocates for it (under the one
// lock of the process's allocator, which the parts of a split replay
// contend for), counts the changes, binds NULL over every text after the
// step and frees the copies. Here a statement binds each parameter by
// position, from one buffer of C memory the batch keeps and reuses, and
// a step's last insert id is all it asks. The rows are the same
// (TestRawStoresWhatTheDriverStores); a driver whose connection does not
// show its SQLite handle is used as before.

// rawConn is the SQLite connection (sqlite3*) under a driver connection.
type rawConn struct {
	tls *libc.TLS
	db  uintptr
	buf uintptr // the text parameters of the statement being bound
	cap int
}

// useRaw is whether the replay store uses the C API; a test turns it off
// to compare.
var useRaw = !rawOff

// rawOf returns the SQLite connection under dc, or nil when it cannot be
// had: dc is not the modernc.org/sqlite connection this was written for.
func rawOf(dc driver.Conn) *rawConn {
	if !useRaw {
		return nil
	}
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	v = v.Elem()
	if t := v.Type(); t.PkgPath() != "modernc.org/sqlite" || t.Name() != "conn" {
		return nil
	}
	f := v.FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Uintptr || f.Uint() == 0 {
		return nil
	}
	return &rawConn{tls: libc.NewTLS(), db: uintptr(f.Uint())}
}

// close frees the buffer; the statements are finalized before.
func (c *rawConn) close() {
	if c == nil {
		return
	}
	if c.buf != 0 {
		libc.Xfree(c.tls, c.buf)
		c.buf, c.cap = 0, 0
	}
	c.tls.Close()
}

// rawStmt is a prepared statement (sqlite3_stmt*) of a rawConn.
type rawStmt struct {
	c      *rawConn
	p      uintptr
	params int
}

func (c *rawConn) prepare(q string) (*rawStmt, error) {
	cq, err := libc.CString(q)
	if err != nil {
		return nil, err
	}
	defer libc.Xfree(c.tls, cq)
	const word = int(unsafe.Sizeof(uintptr(0)))
	pp := c.tls.Alloc(2 * word) // the statement, and where its text ended
	defer c.tls.Free(2 * word)
	*cMem[uintptr](pp), *cMem[uintptr](pp + uintptr(word)) = 0, 0
	if rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, cq, -1, sqlite3.SQLITE_PREPARE_PERSISTENT, pp, pp+uintptr(word)); rc != sqlite3.SQLITE_OK {
		return nil, c.error(rc)
	}
	p := *cMem[uintptr](pp)
	if p == 0 {
		return nil, errors.New("no statement in the text")
	}
	s := &rawStmt{c: c, p: p, params: int(sqlite3.Xsqlite3_bind_parameter_count(c.tls, p))}
	// One statement a text: what follows the first would not run.
	if tail := *cMem[uintptr](pp + uintptr(word)); tail != 0 && strings.TrimSpace(q[tail-cq:]) != "" {
		s.close()
		return nil, fmt.Errorf("more than one statement in %q", q)
	}
	return s, nil
}

// cMem is the value of type T at p in C memory.
func cMem[T any](p uintptr) *T { return *(**T)(unsafe.Pointer(&p)) }

// cBytes is the n bytes at p in C memory.
func cBytes(p uintptr, n int) []byte { return unsafe.Slice(cMem[byte](p), n) }

func (s *rawStmt) close() {
	if s != nil && s.p != 0 {
		sqlite3.Xsqlite3_finalize(s.c.tls, s.p)
		s.p = 0
	}
}

// bind binds args to the statement's parameters by position: a text is
// copied into the connection's buffer, where it stays until the next
// statement is bound (SQLITE_STATIC: the step reads it there).
func (s *rawStmt) bind(args []any) error {
	if len(args) != s.params {
		return fmt.Errorf("%d parameters, %d values", s.params, len(args))
	}
	c := s.c
	need := 1
	for _, a := range args {
		if x, ok := a.(string); ok {
			need += len(x)
		}
	}
	if need > c.cap {
		size := max(need, 2*c.cap, 4096)
		p := libc.Xmalloc(c.tls, libc.Tsize_t(size))
		if p == 0 {
			return errors.New("out of memory for parameters")
		}
		if c.buf != 0 {
			libc.Xfree(c.tls, c.buf)
		}
		c.buf, c.cap = p, size
	}
	off := 0
	for i, a := range args {
		n := int32(i + 1)
		var rc int32
		switch x := a.(type) {
		case nil:
			rc = sqlite3.Xsqlite3_bind_null(c.tls, s.p, n)
		case int64:
			rc = sqlite3.Xsqlite3_bind_int64(c.tls, s.p, n, x)
		case string:
			at := c.buf + uintptr(off)
			copy(cBytes(at, len(x)), x)
			rc = sqlite3.Xsqlite3_bind_text(c.tls, s.p, n, at, int32(len(x)), 0)
			off += len(x)
		default:
			return fmt.Errorf("parameter %d: cannot bind a %T", n, a)
		}
		if rc != sqlite3.SQLITE_OK {
			return c.error(rc)
		}
	}
	return nil
}

// exec runs the statement with args and returns the connection's last
// insert id.
func (s *rawStmt) exec(args []any) (driver.Result, error) {
	c := s.c
	if err := s.bind(args); err != nil {
		sqlite3.Xsqlite3_reset(c.tls, s.p)
		return nil, err
	}
	rc := sqlite3.Xsqlite3_step(c.tls, s.p)
	for rc == sqlite3.SQLITE_ROW {
		rc = sqlite3.Xsqlite3_step(c.tls, s.p)
	}
	if rc != sqlite3.SQLITE_DONE {
		err := c.error(rc)
		sqlite3.Xsqlite3_reset(c.tls, s.p)
		return nil, err
	}
	id := sqlite3.Xsqlite3_last_insert_rowid(c.tls, c.db)
	if rc := sqlite3.Xsqlite3_reset(c.tls, s.p); rc != sqlite3.SQLITE_OK {
		return nil, c.error(rc)
	}
	return rawResult(id), nil
}

// row runs the statement with args and reads its first row into dest:
// an integer as int64, a real as float64, a text as string, a blob as
// []byte, NULL as nil (what the driver reads them as, for these columns).
func (s *rawStmt) row(dest []driver.Value, args []any) (bool, error) {
	c := s.c
	defer sqlite3.Xsqlite3_reset(c.tls, s.p)
	if err := s.bind(args); err != nil {
		return false, err
	}
	switch rc := sqlite3.Xsqlite3_step(c.tls, s.p); rc {
	case sqlite3.SQLITE_DONE:
		return false, nil
	case sqlite3.SQLITE_ROW:
	default:
		return false, c.error(rc)
	}
	cols := int(sqlite3.Xsqlite3_column_count(c.tls, s.p))
	for i := range dest {
		if i >= cols {
			dest[i] = nil
			continue
		}
		n := int32(i)
		switch sqlite3.Xsqlite3_column_type(c.tls, s.p, n) {
		case sqlite3.SQLITE_INTEGER:
			dest[i] = sqlite3.Xsqlite3_column_int64(c.tls, s.p, n)
		case sqlite3.SQLITE_FLOAT:
			dest[i] = sqlite3.Xsqlite3_column_double(c.tls, s.p, n)
		case sqlite3.SQLITE_TEXT:
			p := sqlite3.Xsqlite3_column_text(c.tls, s.p, n)
			dest[i] = string(cBytes(p, int(sqlite3.Xsqlite3_column_bytes(c.tls, s.p, n))))
		case sqlite3.SQLITE_BLOB:
			p := sqlite3.Xsqlite3_column_blob(c.tls, s.p, n)
			dest[i] = append([]byte{}, cBytes(p, int(sqlite3.Xsqlite3_column_bytes(c.tls, s.p, n)))...)
		default:
			dest[i] = nil
		}
	}
	return true, nil
}

// rawResult is a statement's last insert id; the changes are not counted.
type rawResult int64

func (r rawResult) LastInsertId() (int64, error) { return int64(r), nil }
func (r rawResult) RowsAffected() (int64, error) {
	return 0, errors.New("the replay store does not count a statement's changes")
}

// rawError is an error of the C API, worded and coded as the driver's
// (*sqlite.Error): the result code, and SQLite's message for it.
type rawError struct {
	msg  string
	code int
}

func (e *rawError) Error() string { return e.msg }

// Code returns the SQLite result code (extended, as the driver turns them on).
func (e *rawError) Code() int { return e.code }

func (c *rawConn) error(rc int32) error {
	str := libc.GoString(sqlite3.Xsqlite3_errstr(c.tls, rc))
	busy := ""
	if rc&0xff == sqlite3.SQLITE_BUSY {
		busy = " (SQLITE_BUSY)"
	}
	msg := libc.GoString(sqlite3.Xsqlite3_errmsg(c.tls, c.db))
	if msg == str || msg == "" {
		return &rawError{msg: fmt.Sprintf("%s (%d)%s", str, rc, busy), code: int(rc)}
	}
	return &rawError{msg: fmt.Sprintf("%s: %s (%d)%s", str, msg, rc, busy), code: int(rc)}
}

// A query read row by row: start binds it, next steps it, and a column's
// text is read where SQLite holds it, until the next step (no Go string
// made for a row only compared).

func (s *rawStmt) start(args []any) error {
	sqlite3.Xsqlite3_reset(s.c.tls, s.p)
	return s.bind(args)
}

func (s *rawStmt) next() (bool, error) {
	switch rc := sqlite3.Xsqlite3_step(s.c.tls, s.p); rc {
	case sqlite3.SQLITE_ROW:
		return true, nil
	case sqlite3.SQLITE_DONE:
		return false, nil
	default:
		return false, s.c.error(rc)
	}
}

// text is column i of the current row, in SQLite's memory.
func (s *rawStmt) text(i int) []byte {
	p := sqlite3.Xsqlite3_column_text(s.c.tls, s.p, int32(i))
	if p == 0 {
		return nil
	}
	return cBytes(p, int(sqlite3.Xsqlite3_column_bytes(s.c.tls, s.p, int32(i))))
}

func (s *rawStmt) int64(i int) int64 { return sqlite3.Xsqlite3_column_int64(s.c.tls, s.p, int32(i)) }
