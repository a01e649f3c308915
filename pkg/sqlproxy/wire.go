package sqlproxy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
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

// checkParam is the server setting that has a backend look, while a
// statement runs, whether its client is still there.
const checkParam = "client_connection_check_interval"

// withParam is the protocol 3 startup packet raw with the parameter name
// set to value, unless the client set it already, itself or in its
// options; a packet that is not protocol 3 or does not end as the
// protocol says comes back as it was, for the server to judge.
func withParam(raw []byte, name, value string) []byte {
	if len(raw) < 9 || binary.BigEndian.Uint32(raw[4:8])>>16 != 3 || raw[len(raw)-1] != 0 {
		return raw
	}
	rest := raw[8 : len(raw)-1]
	for len(rest) > 0 {
		k, after, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return raw
		}
		v, after, ok := bytes.Cut(after, []byte{0})
		if !ok {
			return raw
		}
		if string(k) == name || string(k) == "options" && bytes.Contains(v, []byte(name)) {
			return raw
		}
		rest = after
	}
	if len(raw)+len(name)+len(value)+2 > maxStartup {
		return raw
	}
	out := make([]byte, 0, len(raw)+len(name)+len(value)+2)
	out = append(out, raw[:len(raw)-1]...)
	out = append(out, name...)
	out = append(out, 0)
	out = append(out, value...)
	out = append(out, 0, 0)
	binary.BigEndian.PutUint32(out[:4], uint32(len(out)))
	return out
}

// message is one message after the startup: its type byte and the whole
// message as it travels (type, length, body).
type message struct {
	typ byte
	raw []byte
}

func (m message) body() []byte { return m.raw[5:] }

// maxBuffered bounds a message the proxy reads whole, to look inside it:
// what one connection may make it hold. A message over it is either
// relayed as it comes (rows and COPY data, which the proxy does not
// read) or ends the connection.
const maxBuffered = 64 << 20

// readChunk is how much of a message is read at a time once it is over
// it: memory grows with the bytes that came, not with the length a
// message declares.
const readChunk = 1 << 20

// tooLarge is a message over maxBuffered that the proxy would have to
// read whole.
type tooLarge struct {
	typ  byte
	size int
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("a PostgreSQL message of type %q and %d bytes is over the %d MiB the database proxy reads whole, so it closed the connection", e.typ, e.size, maxBuffered>>20)
}

// readHead reads a message's type and the length of its body.
func readHead(r io.Reader) (head [5]byte, n int, err error) {
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return head, 0, err
	}
	l := binary.BigEndian.Uint32(head[1:])
	if l < 4 || l > maxMessage {
		return head, 0, errFraming
	}
	return head, int(l) - 4, nil
}

// readMessage reads one message: a type byte, a length that counts itself,
// the body. buf is reused when it is big enough.
func readMessage(r io.Reader, buf []byte) (message, error) {
	head, n, err := readHead(r)
	if err != nil {
		return message{}, err
	}
	return readBody(r, head, n, buf)
}

// readBody reads the body of a message whose head was read.
func readBody(r io.Reader, head [5]byte, n int, buf []byte) (message, error) {
	if n > maxBuffered {
		return message{}, &tooLarge{typ: head[0], size: n + 5}
	}
	size := n + 5
	want := size
	if want > readChunk {
		want = readChunk
	}
	if cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	raw := append(buf[:0], head[:]...)
	for len(raw) < size {
		k := min(size-len(raw), readChunk)
		raw = slices.Grow(raw, k)
		got, err := io.ReadFull(r, raw[len(raw):len(raw)+k])
		raw = raw[:len(raw)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return message{}, err
		}
	}
	return message{typ: head[0], raw: raw}, nil
}

// streamsFromClient and streamsFromServer are the messages the proxy
// relays without reading them whole when they are large: COPY data, and
// the server's rows.
func streamsFromClient(typ byte) bool { return typ == 'd' }

func streamsFromServer(typ byte) bool { return typ == 'd' || typ == 'D' }

// read reads the next message from r for the relay. A message over
// maxBuffered that streams is copied to w as it comes, and read returns
// a message with no bytes; one that does not ends the connection, and
// the proxy keeps why.
func (c *conn) read(r *bufio.Reader, w *bufio.Writer, buf []byte, streams func(byte) bool) (message, error) {
	head, n, err := readHead(r)
	if err == nil && n > maxBuffered && streams(head[0]) {
		if _, err := w.Write(head[:]); err != nil {
			return message{}, err
		}
		_, err := io.CopyN(w, r, int64(n))
		return message{}, err
	}
	var m message
	if err == nil {
		m, err = readBody(r, head, n, buf)
	}
	if err != nil {
		var big *tooLarge
		if errors.As(err, &big) || err == errFraming {
			c.p.broke(err)
		}
	}
	return m, err
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

// splitStatements cuts a simple query into its statements at the
// semicolons outside quotes, dollar quotes and comments, leaving out the
// blank ones.
func splitStatements(q string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); !Blank(s) {
			out = append(out, s)
		}
	}
	start := 0
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == ';':
			add(q[start:i])
			i++
			start = i
		case c == '\'' || c == '"':
			i = skipQuoted(q, i, c == '\'' && i > 0 && (q[i-1] == 'E' || q[i-1] == 'e') && (i < 2 || !isIdentByte(q[i-2])))
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(q)
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			i = skipComment(q, i)
		case c == '$' && (i == 0 || !isIdentByte(q[i-1])):
			i = skipDollar(q, i)
		default:
			i++
		}
	}
	add(q[start:])
	return out
}

// skipQuoted is the index past the quoted string or identifier at q[i];
// backslash escapes (E'…') when escapes.
func skipQuoted(q string, i int, escapes bool) int {
	quote := q[i]
	for i++; i < len(q); i++ {
		switch {
		case escapes && q[i] == '\\':
			i++
		case q[i] == quote:
			if i+1 < len(q) && q[i+1] == quote {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(q)
}

// skipComment is the index past the block comment at q[i]; they nest.
func skipComment(q string, i int) int {
	depth := 0
	for i < len(q) {
		switch {
		case strings.HasPrefix(q[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(q[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(q)
}

// skipDollar is the index past the dollar-quoted string at q[i] ($$…$$,
// $tag$…$tag$), or past the $ when none begins there ($1).
func skipDollar(q string, i int) int {
	j := i + 1
	for j < len(q) && q[j] != '$' && isIdentByte(q[j]) && !(j == i+1 && q[j] >= '0' && q[j] <= '9') {
		j++
	}
	if j >= len(q) || q[j] != '$' {
		return i + 1
	}
	tag := q[i : j+1]
	if k := strings.Index(q[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag)
	}
	return len(q)
}

func isIdentByte(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
