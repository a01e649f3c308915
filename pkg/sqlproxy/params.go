package sqlproxy

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync/atomic"
)

// Param is one value bound to a statement, as the trace shows it.
type Param struct {
	// Text is the value as text (a number in decimal, a string as it
	// is); empty for a NULL, the bytes in hex when Undecoded.
	Text string
	Null bool
	// Undecoded: it came in a binary format of a type the proxy does
	// not read, or of a type it was not told.
	Undecoded bool
}

// prepared is a statement a Parse prepared on a PostgreSQL connection:
// the types of its parameters, as the Parse gave them or, once the
// server described the statement, as the server said (a
// ParameterDescription, which comes on the server's side, after the Bind
// may have been read: so a bound statement keeps the prepared one and
// decodes its values when the trace is read).
type prepared struct {
	types atomic.Pointer[[]uint32]
}

// bound is what a Bind bound: the values as they came, the formats of
// each (0 text, 1 binary) and the statement they were bound to.
type bound struct {
	values  [][]byte
	formats []int16
	prep    *prepared
}

// parseTypes reads the parameter types a Parse message names (0: left
// to the server).
func parseTypes(m message) []uint32 {
	_, rest, ok := cstring(m.body())
	if !ok {
		return nil
	}
	if _, rest, ok = cstring(rest); !ok {
		return nil
	}
	out, _ := oids(rest)
	return out
}

// describeStatement reads a Describe message: the statement's name, when
// it describes a statement (not a portal).
func describeStatement(m message) (string, bool) {
	b := m.body()
	if len(b) < 1 || b[0] != 'S' {
		return "", false
	}
	name, _, ok := cstring(b[1:])
	return name, ok
}

// parameterTypes reads a ParameterDescription message.
func parameterTypes(m message) ([]uint32, bool) { return oids(m.body()) }

// oids reads a count (Int16) and that many type OIDs (Int32 each), as
// Parse and ParameterDescription hold them.
func oids(b []byte) ([]uint32, bool) {
	if len(b) < 2 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < 4*n {
		return nil, false
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return out, true
}

// bindFormats reads the parameter format codes of a Bind message, one
// per parameter of np (none: all text; one: all that one).
func bindFormats(m message) []int16 {
	_, rest, ok := cstring(m.body())
	if !ok {
		return nil
	}
	if _, rest, ok = cstring(rest); !ok || len(rest) < 2 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if len(rest) < 2*n {
		return nil
	}
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(binary.BigEndian.Uint16(rest[2*i:]))
	}
	return out
}

// params decodes what a Bind bound: text formats as they are, binary
// ones of the common types (integers, booleans, floats, numeric, text,
// JSON, UUID, bytea) whose type the Parse or the server's description
// gave; others Undecoded.
func (b *bound) params() []Param {
	if b == nil || b.values == nil {
		return nil
	}
	var types []uint32
	if b.prep != nil {
		if t := b.prep.types.Load(); t != nil {
			types = *t
		}
	}
	out := make([]Param, len(b.values))
	for i, v := range b.values {
		if v == nil {
			out[i] = Param{Null: true}
			continue
		}
		format := int16(0)
		switch {
		case len(b.formats) == 1:
			format = b.formats[0]
		case i < len(b.formats):
			format = b.formats[i]
		}
		if format == 0 {
			out[i] = Param{Text: string(v)}
			continue
		}
		var oid uint32
		if i < len(types) {
			oid = types[i]
		}
		if s, ok := binaryPG(v, oid); ok {
			out[i] = Param{Text: s}
			continue
		}
		out[i] = Param{Text: hex.EncodeToString(v), Undecoded: true}
	}
	return out
}

// PostgreSQL type oids whose binary format binaryPG reads.
const (
	oidBool    = 16
	oidBytea   = 17
	oidName    = 19
	oidInt8    = 20
	oidInt2    = 21
	oidInt4    = 23
	oidText    = 25
	oidOID     = 26
	oidJSON    = 114
	oidFloat4  = 700
	oidFloat8  = 701
	oidBpchar  = 1042
	oidVarchar = 1043
	oidNumeric = 1700
	oidUUID    = 2950
	oidJSONB   = 3802
)

// binaryPG is a value of PostgreSQL's binary format as text, for the
// types it reads.
func binaryPG(v []byte, oid uint32) (string, bool) {
	switch oid {
	case oidText, oidVarchar, oidBpchar, oidName, oidJSON:
		return string(v), true
	case oidJSONB:
		if len(v) < 1 || v[0] != 1 {
			return "", false
		}
		return string(v[1:]), true
	case oidBool:
		if len(v) != 1 {
			return "", false
		}
		return strconv.FormatBool(v[0] != 0), true
	case oidInt2:
		if len(v) != 2 {
			return "", false
		}
		return strconv.Itoa(int(int16(binary.BigEndian.Uint16(v)))), true
	case oidInt4:
		if len(v) != 4 {
			return "", false
		}
		return strconv.Itoa(int(int32(binary.BigEndian.Uint32(v)))), true
	case oidOID:
		if len(v) != 4 {
			return "", false
		}
		return strconv.FormatUint(uint64(binary.BigEndian.Uint32(v)), 10), true
	case oidInt8:
		if len(v) != 8 {
			return "", false
		}
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(v)), 10), true
	case oidFloat4:
		if len(v) != 4 {
			return "", false
		}
		return strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(v))), 'g', -1, 32), true
	case oidFloat8:
		if len(v) != 8 {
			return "", false
		}
		return strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(v)), 'g', -1, 64), true
	case oidUUID:
		if len(v) != 16 {
			return "", false
		}
		h := hex.EncodeToString(v)
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], true
	case oidBytea:
		return `\x` + hex.EncodeToString(v), true
	case oidNumeric:
		return numeric(v)
	}
	return "", false
}

// numeric reads PostgreSQL's binary numeric: a count of base-10000
// digits, the weight of the first, a sign and the digits after the
// point shown.
func numeric(v []byte) (string, bool) {
	if len(v) < 8 {
		return "", false
	}
	n := int(binary.BigEndian.Uint16(v))
	weight := int(int16(binary.BigEndian.Uint16(v[2:])))
	sign := binary.BigEndian.Uint16(v[4:])
	scale := int(binary.BigEndian.Uint16(v[6:]))
	if len(v) != 8+2*n {
		return "", false
	}
	switch sign {
	case 0xC000:
		return "NaN", true
	case 0xD000:
		return "Infinity", true
	case 0xF000:
		return "-Infinity", true
	case 0, 0x4000:
	default:
		return "", false
	}
	// The value is Σ digit_i × 10000^(weight-i): an integer of n digits
	// times 10000^(weight-n+1).
	x := new(big.Int)
	base := big.NewInt(10000)
	for i := range n {
		d := binary.BigEndian.Uint16(v[8+2*i:])
		if d >= 10000 {
			return "", false
		}
		x.Mul(x, base).Add(x, big.NewInt(int64(d)))
	}
	exp := 4 * (weight - n + 1) // a power of ten
	if x.Sign() == 0 {
		exp = 0
	}
	digits := decimalPoint(x.String(), exp, scale)
	if sign == 0x4000 && strings.Trim(digits, "0.") != "" {
		digits = "-" + digits
	}
	return digits, true
}

// decimalPoint writes the integer digits times 10^exp as a decimal with
// scale digits after the point, cut or padded with zeros.
func decimalPoint(digits string, exp, scale int) string {
	switch {
	case exp >= 0:
		digits += strings.Repeat("0", exp)
		if scale > 0 {
			digits += "." + strings.Repeat("0", scale)
		}
	default:
		frac := -exp
		if len(digits) <= frac {
			digits = strings.Repeat("0", frac-len(digits)+1) + digits
		}
		whole, part := digits[:len(digits)-frac], digits[len(digits)-frac:]
		switch {
		case scale < len(part):
			part = part[:scale]
		default:
			part += strings.Repeat("0", scale-len(part))
		}
		digits = whole
		if part != "" {
			digits += "." + part
		}
	}
	return digits
}

// mysqlParams are the values an execute bound, as executeValues read
// them (text, nil for a NULL), of its types (two bytes each): dates and
// times, kept as their bytes, are Undecoded, and so is each value after
// one it could not read.
func mysqlParams(values [][]byte, types []byte, params int) []Param {
	if params == 0 {
		return nil
	}
	out := make([]Param, params)
	for i := range out {
		switch {
		case i >= len(values):
			out[i] = Param{Undecoded: true}
		case values[i] == nil:
			out[i] = Param{Null: true}
		case 2*i < len(types) && isDateType(types[2*i]):
			out[i] = Param{Text: hex.EncodeToString(values[i]), Undecoded: true}
		default:
			out[i] = Param{Text: string(values[i])}
		}
	}
	return out
}

func isDateType(t byte) bool {
	return t == typeDate || t == typeDateTime || t == typeTimestamp || t == typeTime
}

// described takes a ParameterDescription: the types of the statement
// the oldest Describe still waiting named.
func (c *conn) described(m message) {
	types, ok := parameterTypes(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.describing) == 0 {
		return
	}
	p := c.describing[0]
	c.describing = c.describing[1:]
	if ok {
		p.types.Store(&types)
	}
}

// forgetDescribes drops the Describes waiting for a description at an
// error: the server skips what follows it up to the Sync, and which of
// them it skipped is not known. Their statements' values in a binary
// format then stay undecoded, never decoded as another's types.
func (c *conn) forgetDescribes() {
	c.mu.Lock()
	c.describing = nil
	c.mu.Unlock()
}
