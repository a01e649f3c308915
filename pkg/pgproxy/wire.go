package pgproxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
)

// The codes a startup packet can carry instead of a protocol version.
const (
	codeSSL    = 80877103
	codeGSSENC = 80877104
	codeCancel = 80877102
)

// maxStartup bounds a startup packet (PostgreSQL allows 10,000 bytes).
const maxStartup = 10_000

// maxMessage bounds one message: PostgreSQL's own limit is 1 GB.
const maxMessage = 1 << 30

// errFraming is a message whose length cannot be right.
var errFraming = errors.New("the PostgreSQL wire protocol was broken: a message length out of range")

// startup is the first packet of a connection: its code (a protocol
// version or one of the request codes) and the whole packet as read.
type startup struct {
	code uint32
	raw  []byte
}

// readStartup reads a startup packet: a length, a code, then the rest.
func readStartup(r io.Reader) (startup, error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return startup{}, err
	}
	n := binary.BigEndian.Uint32(head[:4])
	if n < 8 || n > maxStartup {
		return startup{}, errFraming
	}
	raw := make([]byte, n)
	copy(raw, head[:])
	if _, err := io.ReadFull(r, raw[8:]); err != nil {
		return startup{}, err
	}
	return startup{code: binary.BigEndian.Uint32(head[4:8]), raw: raw}, nil
}

// message is one message after the startup: its type byte and the whole
// message as it travels (type, length, body).
type message struct {
	typ byte
	raw []byte
}

func (m message) body() []byte { return m.raw[5:] }

// readMessage reads one message: a type byte, a length that counts itself,
// the body. buf is reused when it is big enough.
func readMessage(r io.Reader, buf []byte) (message, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return message{}, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > maxMessage {
		return message{}, errFraming
	}
	size := int(n) + 1
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	raw := buf[:size]
	copy(raw, head[:])
	if _, err := io.ReadFull(r, raw[5:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return message{}, err
	}
	return message{typ: head[0], raw: raw}, nil
}

// cstring reads a NUL-terminated string from b and returns the rest.
func cstring(b []byte) (string, []byte, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", nil, false
	}
	return string(b[:i]), b[i+1:], true
}

// queryText is the text of a simple Query message.
func queryText(m message) string {
	s, _, _ := cstring(m.body())
	return s
}

// parseMsg reads a Parse message: the statement's name and text.
func parseMsg(m message) (name, text string, ok bool) {
	name, rest, ok := cstring(m.body())
	if !ok {
		return "", "", false
	}
	text, _, ok = cstring(rest)
	return name, text, ok
}

// bindMsg reads a Bind message: the portal's name and its statement's.
func bindMsg(m message) (portal, stmt string, ok bool) {
	portal, rest, ok := cstring(m.body())
	if !ok {
		return "", "", false
	}
	stmt, _, ok = cstring(rest)
	return portal, stmt, ok
}

// executeMsg reads an Execute message: its portal's name.
func executeMsg(m message) (portal string, ok bool) {
	portal, _, ok = cstring(m.body())
	return portal, ok
}

// closeMsg reads a Close message: whether it closes a statement ('S') or
// a portal ('P'), and its name.
func closeMsg(m message) (kind byte, name string, ok bool) {
	b := m.body()
	if len(b) < 1 {
		return 0, "", false
	}
	name, _, ok = cstring(b[1:])
	return b[0], name, ok
}

// commandTag reads a CommandComplete message's tag ("INSERT 0 1").
func commandTag(m message) string {
	s, _, _ := cstring(m.body())
	return s
}

// errorCode reads the SQLSTATE of an ErrorResponse ("23505"), and its
// message.
func errorCode(m message) (code, text string) {
	b := m.body()
	for len(b) > 0 && b[0] != 0 {
		f := b[0]
		v, rest, ok := cstring(b[1:])
		if !ok {
			break
		}
		switch f {
		case 'C':
			code = v
		case 'M':
			text = v
		}
		b = rest
	}
	return code, text
}

// backendKey reads a BackendKeyData message: the server process's id.
func backendKey(m message) (int32, bool) {
	b := m.body()
	if len(b) < 8 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(b)), true
}

// flushMsg is a Flush message, which asks the server for its pending output.
var flushMsg = []byte{'H', 0, 0, 0, 4}
