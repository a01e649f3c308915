package sqlproxy

// The MySQL client/server protocol as the proxy reads it: packets framed
// by a 3-byte little-endian length and a sequence id, a payload of 16 MiB
// less one byte continued by the next packet; the server's greeting,
// whose capabilities the proxy narrows; the client's commands; and the
// packets that end a command's answer (OK, ERR, EOF, a result set).

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxPayload is a physical packet's largest payload: a packet this long
// is continued by the next one.
const maxPayload = 1<<24 - 1

// maxPacket bounds a logical packet the proxy reads whole: the largest a
// server accepts (max_allowed_packet is at most 1 GiB).
const maxPacket = 1 << 30

// errPacketLarge is a logical packet over maxPacket.
var errPacketLarge = fmt.Errorf("a MySQL packet over the %d MiB a server accepts came, so the database proxy closed the connection", maxPacket>>20)

// myPacket is one logical packet: its physical packets as they travel
// (headers included) and its payload, joined when it was continued.
type myPacket struct {
	seq     byte // the sequence id of its first physical packet
	raw     []byte
	payload []byte
}

// readPacket reads one logical packet. buf is reused when it is big
// enough.
func readPacket(r io.Reader, buf []byte) (myPacket, error) {
	var head [4]byte
	raw := buf[:0]
	var payload []byte
	first := true
	var p myPacket
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if !first && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return myPacket{}, err
		}
		n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		if len(raw)+4+n > maxPacket {
			return myPacket{}, errPacketLarge
		}
		if first {
			p.seq = head[3]
		}
		start := len(raw)
		raw = append(raw, head[:]...)
		if cap(raw)-len(raw) < n {
			grown := make([]byte, len(raw), len(raw)+n)
			copy(grown, raw)
			raw = grown
		}
		if _, err := io.ReadFull(r, raw[len(raw):len(raw)+n]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return myPacket{}, err
		}
		raw = raw[:len(raw)+n]
		if first && n < maxPayload {
			p.raw, p.payload = raw, raw[4:]
			return p, nil
		}
		payload = append(payload, raw[start+4:]...)
		first = false
		if n < maxPayload {
			p.raw, p.payload = raw, payload
			return p, nil
		}
	}
}

// Capability flags the proxy reads or clears.
const (
	capLongPassword      = 1 << 0 // MariaDB clears it to say extended capabilities follow
	capCompress          = 1 << 5
	capProtocol41        = 1 << 9
	capSSL               = 1 << 11
	capMultiStatements   = 1 << 16
	capDeprecateEOF      = 1 << 24
	capOptionalMetadata  = 1 << 25
	capZstdCompression   = 1 << 26
	capQueryAttributes   = 1 << 27
	capSSLVerifyServer   = 1 << 30
	capCleared           = capSSL | capCompress | capZstdCompression | capOptionalMetadata | capQueryAttributes | capSSLVerifyServer
	serverInTrans        = 0x0001
	serverAutocommit     = 0x0002
	serverMoreResults    = 0x0008
	serverCursorExists   = 0x0040
	greetingProtocol10   = 0x0a
	greetingFixedAfterID = 8 + 1 // auth-plugin-data part 1, filler
)

// greeting is what the proxy reads in the server's initial handshake.
type greeting struct {
	connID uint32
	caps   uint32
}

// narrowGreeting reads the server's initial handshake and clears, in
// payload, the capabilities whose use would hide the conversation from
// the proxy: TLS, compression, MySQL 8's query attributes and optional
// result-set metadata, and MariaDB's extended capabilities (metadata
// caching, bulk operations, progress reports). The client, seeing them
// absent, does not ask for them. ok is false when payload is not a
// protocol 10 handshake (an error the server sends instead, say).
func narrowGreeting(payload []byte) (g greeting, ok bool) {
	if len(payload) < 1 || payload[0] != greetingProtocol10 {
		return g, false
	}
	i := bytes.IndexByte(payload[1:], 0)
	if i < 0 {
		return g, false
	}
	p := 1 + i + 1
	if len(payload) < p+4+greetingFixedAfterID+2 {
		return g, false
	}
	g.connID = binary.LittleEndian.Uint32(payload[p:])
	p += 4 + greetingFixedAfterID
	lower := binary.LittleEndian.Uint16(payload[p:])
	g.caps = uint32(lower)
	lower &^= uint16(capCleared & 0xffff)
	binary.LittleEndian.PutUint16(payload[p:], lower)
	p += 2
	// charset (1), status (2), upper capabilities (2), auth data length
	// (1), then 10 bytes of which MariaDB's last 4 are its extended
	// capabilities.
	if len(payload) < p+1+2+2 {
		return g, true
	}
	p += 3
	upper := binary.LittleEndian.Uint16(payload[p:])
	g.caps |= uint32(upper) << 16
	upper &^= uint16(capCleared >> 16)
	binary.LittleEndian.PutUint16(payload[p:], upper)
	p += 2 + 1
	if g.caps&capLongPassword == 0 && len(payload) >= p+10 {
		clear(payload[p+6 : p+10])
	}
	return g, true
}

// clientCaps are the capabilities a client's handshake response (or SSL
// request) asks for; 0 when it is too short to say.
func clientCaps(payload []byte) uint32 {
	if len(payload) < 4 {
		return 0
	}
	return binary.LittleEndian.Uint32(payload)
}

// Commands a client sends, by their first byte.
const (
	comQuit             = 0x01
	comInitDB           = 0x02
	comQuery            = 0x03
	comFieldList        = 0x04
	comStatistics       = 0x09
	comProcessInfo      = 0x0a // answered with a result set
	comChangeUser       = 0x11
	comStmtPrepare      = 0x16
	comStmtExecute      = 0x17
	comStmtSendLongData = 0x18
	comStmtClose        = 0x19
	comStmtReset        = 0x1a
	comStmtFetch        = 0x1c
	comResetConnection  = 0x1f
	comBinlogDump       = 0x12
	comBinlogDumpGTID   = 0x1e
	comRegisterSlave    = 0x15
)

// lenencInt reads a length-encoded integer; ok is false when b is too
// short or starts with a byte that is no integer (0xfb NULL, 0xff).
func lenencInt(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c < 0xfb:
		return uint64(c), 1, true
	case c == 0xfc && len(b) >= 3:
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3, true
	case c == 0xfd && len(b) >= 4:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case c == 0xfe && len(b) >= 9:
		return binary.LittleEndian.Uint64(b[1:]), 9, true
	}
	return 0, 0, false
}

// okPacket reads an OK packet (header 0x00, or 0xfe ending a result set
// when EOF is deprecated): rows affected and the server's status.
func okPacket(payload []byte) (affected uint64, status uint16, ok bool) {
	if len(payload) < 1 {
		return 0, 0, false
	}
	b := payload[1:]
	affected, n, ok := lenencInt(b)
	if !ok {
		return 0, 0, false
	}
	b = b[n:]
	if _, n, ok = lenencInt(b); !ok {
		return 0, 0, false
	}
	b = b[n:]
	if len(b) < 2 {
		return affected, 0, true
	}
	return affected, binary.LittleEndian.Uint16(b), true
}

// eofStatus is the server status an EOF packet (0xfe, shorter than 9
// bytes) carries after its warning count.
func eofStatus(payload []byte) uint16 {
	if len(payload) < 5 {
		return 0
	}
	return binary.LittleEndian.Uint16(payload[3:])
}

// isEOF reports whether a packet in a result set ends it: a 0xfe header
// on a packet too short to be a row (a row starting 0xfe would hold a
// value of 16 MiB or more).
func isEOF(payload []byte, deprecateEOF bool) bool {
	if len(payload) == 0 || payload[0] != 0xfe {
		return false
	}
	if deprecateEOF {
		return len(payload) < maxPayload
	}
	return len(payload) < 9
}

// endStatus is the server status the packet ending a result set carries:
// an EOF, or an OK in its place.
func endStatus(payload []byte, deprecateEOF bool) uint16 {
	if deprecateEOF && len(payload) >= 7 {
		if _, status, ok := okPacket(payload); ok {
			return status
		}
	}
	return eofStatus(payload)
}

// errPacket reads an ERR packet's error number.
func errPacket(payload []byte) (code uint16, ok bool) {
	if len(payload) < 3 || payload[0] != 0xff {
		return 0, false
	}
	return binary.LittleEndian.Uint16(payload[1:]), true
}

// prepareOK reads the answer to COM_STMT_PREPARE: the statement's id,
// and how many columns and parameters it has.
func prepareOK(payload []byte) (id uint32, columns, params int, ok bool) {
	if len(payload) < 9 || payload[0] != 0 {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint32(payload[1:]), int(binary.LittleEndian.Uint16(payload[5:])), int(binary.LittleEndian.Uint16(payload[7:])), true
}

// stmtID reads the statement id COM_STMT_EXECUTE, _CLOSE, _RESET,
// _FETCH and _SEND_LONG_DATA start with.
func stmtID(payload []byte) (uint32, bool) {
	if len(payload) < 5 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(payload[1:]), true
}

// Column types of the binary protocol (the values bound to an execute).
const (
	typeDecimal    = 0x00
	typeTiny       = 0x01
	typeShort      = 0x02
	typeLong       = 0x03
	typeFloat      = 0x04
	typeDouble     = 0x05
	typeNull       = 0x06
	typeTimestamp  = 0x07
	typeLongLong   = 0x08
	typeInt24      = 0x09
	typeDate       = 0x0a
	typeTime       = 0x0b
	typeDateTime   = 0x0c
	typeYear       = 0x0d
	typeNewDecimal = 0xf6
)

// executeValues decodes the values COM_STMT_EXECUTE binds to a statement
// of params parameters, as text (a NULL is nil): numbers in decimal,
// strings as they are; types are those the execute sends, or the last
// ones when it sends none (kept in *types). Those sent before with
// COM_STMT_SEND_LONG_DATA (long) are not in the packet and are taken
// from long. nil when the packet cannot be read so far.
func executeValues(payload []byte, params int, types *[]byte, long map[int][]byte) [][]byte {
	if params == 0 || len(payload) < 10 {
		return nil
	}
	b := payload[10:]
	nb := (params + 7) / 8
	if len(b) < nb+1 {
		return nil
	}
	nulls, b := b[:nb], b[nb:]
	bound := b[0]
	b = b[1:]
	if bound == 1 {
		if len(b) < 2*params {
			return nil
		}
		*types = append((*types)[:0], b[:2*params]...)
		b = b[2*params:]
	}
	if len(*types) < 2*params {
		return nil
	}
	out := make([][]byte, params)
	for i := range params {
		if nulls[i/8]&(1<<(i%8)) != 0 {
			continue
		}
		if v, ok := long[i]; ok {
			out[i] = v
			continue
		}
		typ, unsigned := (*types)[2*i], (*types)[2*i+1]&0x80 != 0
		v, n, ok := binaryValue(b, typ, unsigned)
		if !ok {
			return out[:i]
		}
		out[i], b = v, b[n:]
	}
	return out
}

// binaryValue reads one value of the binary protocol as text, and how
// many bytes it took.
func binaryValue(b []byte, typ byte, unsigned bool) (v []byte, n int, ok bool) {
	fixed := func(size int) bool { return len(b) >= size }
	switch typ {
	case typeNull:
		return nil, 0, true
	case typeTiny:
		return binaryInteger(b, 1, unsigned)
	case typeShort, typeYear:
		return binaryInteger(b, 2, unsigned)
	case typeLong, typeInt24:
		return binaryInteger(b, 4, unsigned)
	case typeLongLong:
		return binaryInteger(b, 8, unsigned)
	case typeFloat:
		if !fixed(4) {
			return nil, 0, false
		}
		return strconv.AppendFloat(nil, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 'g', -1, 32), 4, true
	case typeDouble:
		if !fixed(8) {
			return nil, 0, false
		}
		return strconv.AppendFloat(nil, math.Float64frombits(binary.LittleEndian.Uint64(b)), 'g', -1, 64), 8, true
	case typeDate, typeDateTime, typeTimestamp, typeTime:
		// A length byte and that many bytes: kept as they are, for no
		// mark is a date.
		if !fixed(1) || len(b) < 1+int(b[0]) {
			return nil, 0, false
		}
		return bytes.Clone(b[1 : 1+int(b[0])]), 1 + int(b[0]), true
	}
	// Strings, decimals, blobs, JSON, bits, enums: a length-encoded string.
	l, k, ok := lenencInt(b)
	if !ok || uint64(len(b)-k) < l {
		return nil, 0, false
	}
	return bytes.Clone(b[k : k+int(l)]), k + int(l), true
}

// binaryInteger reads an integer of the binary protocol, size bytes
// little-endian (1, 2, 4 or 8), as text: signed unless unsigned says so.
// It returns how many bytes it took.
func binaryInteger(b []byte, size int, unsigned bool) (v []byte, n int, ok bool) {
	if len(b) < size {
		return nil, 0, false
	}
	var u uint64
	var i int64
	switch size {
	case 1:
		u, i = uint64(b[0]), int64(int8(b[0]))
	case 2:
		x := binary.LittleEndian.Uint16(b)
		u, i = uint64(x), int64(int16(x))
	case 4:
		x := binary.LittleEndian.Uint32(b)
		u, i = uint64(x), int64(int32(x))
	default:
		u = binary.LittleEndian.Uint64(b)
		i = int64(u)
	}
	if unsigned {
		return strconv.AppendUint(nil, u, 10), size, true
	}
	return strconv.AppendInt(nil, i, 10), size, true
}

// mysqlAnswer is the answer a statement got, in the form the proxy's
// traces show: "INSERT 1", "UPDATE 2", "DELETE 0", "LOAD 1000" (rows
// affected),
// "SELECT 3" (rows of a result set), "OK" for another statement, "ERROR
// 1062" for an error.
func mysqlAnswer(text string, affected uint64) string {
	s := skipComments(text)
	for _, w := range []string{"insert", "replace", "update", "delete", "load"} {
		if Matches(s, w) {
			return strings.ToUpper(w) + " " + strconv.FormatUint(affected, 10)
		}
	}
	return "OK"
}

// Inserted is how many rows an INSERT's answer says it wrote, in either
// database's form ("INSERT 0 1" from PostgreSQL, "INSERT 1" from MySQL);
// 0 for any other answer.
func Inserted(answer string) int {
	rest, ok := strings.CutPrefix(answer, "INSERT ")
	if !ok {
		return 0
	}
	if _, n, two := strings.Cut(rest, " "); two {
		rest = n
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return 0
	}
	return n
}

// splitMySQL cuts a COM_QUERY's text into its statements at the
// semicolons outside quotes, backquotes and comments (MySQL's: --
// followed by a space, #, /* */), leaving out the blank ones. Strings
// take backslash escapes, as they do unless the server runs with
// NO_BACKSLASH_ESCAPES.
func splitMySQL(q string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); !blankMySQL(s) {
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
		case c == '\'' || c == '"' || c == '`':
			i = skipQuoted(q, i, c != '`')
		case c == '#', c == '-' && strings.HasPrefix(q[i:], "--") && (i+2 == len(q) || q[i+2] == ' ' || q[i+2] == '\t' || q[i+2] == '\n' || q[i+2] == '\r'):
			if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(q)
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			// MySQL's block comments do not nest.
			if j := strings.Index(q[i+2:], "*/"); j >= 0 {
				i += 2 + j + 2
			} else {
				i = len(q)
			}
		default:
			i++
		}
	}
	add(q[start:])
	return out
}

// blankMySQL reports whether a statement is only comments, spaces and
// semicolons, # comments included.
func blankMySQL(s string) bool {
	for {
		s = strings.TrimLeft(s, " \t\r\n;")
		if !strings.HasPrefix(s, "#") {
			return Blank(s)
		}
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return true
		}
		s = s[i+1:]
	}
}
