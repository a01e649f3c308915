package handler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Canonical returns the canonical JSON form of the JSON document raw: object
// keys sorted, no insignificant space, numbers spelled one way (1, 1.0 and
// 1e0 are all "1"; 0.50 is "0.5"). Two payloads are the same event payload
// exactly when their canonical forms are equal.
func Canonical(raw []byte) (string, error) {
	if plainString(raw) {
		// Already canonical; replays compare millions of these.
		return string(raw), nil
	}
	// A lone surrogate escape decodes to U+FFFD, so that different payloads
	// would compare equal; a key given twice would be read as its last
	// value here and as its first by a path. Both are refused.
	if HasLoneSurrogate(raw) {
		return "", fmt.Errorf("payload holds a lone UTF-16 surrogate escape (\\uD800-\\uDFFF), which names no character")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("payload is not valid JSON: %w", err)
	}
	if k, dup := duplicateKey(gjson.ParseBytes(raw)); dup {
		return "", fmt.Errorf("payload names the key %s twice in one object", strconv.Quote(k))
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("payload has data after its JSON value")
	}
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String(), nil
}

// plainString reports whether raw is a JSON string of printable ASCII that
// needs no escape, which is its own canonical form (json.Marshal would
// write it unchanged: no quote, backslash, control character or <, >, &).
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// duplicateKey returns a key that an object in r names twice.
func duplicateKey(r gjson.Result) (dup string, found bool) {
	switch {
	case r.IsObject():
		var small [8]string
		seen := small[:0]
		r.ForEach(func(k, v gjson.Result) bool {
			for _, s := range seen {
				if s == k.Str {
					dup, found = k.Str, true
					return false
				}
			}
			seen = append(seen, k.Str)
			dup, found = duplicateKey(v)
			return !found
		})
	case r.IsArray():
		r.ForEach(func(_, v gjson.Result) bool {
			dup, found = duplicateKey(v)
			return !found
		})
	}
	return dup, found
}

// HasLoneSurrogate reports whether the JSON text raw holds a \u escape of a
// UTF-16 surrogate that is not half of a pair: decoders turn each into
// U+FFFD, so two different texts would read the same.
func HasLoneSurrogate(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`\u`)) {
		return false
	}
	hex := func(i int) int {
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return -1
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return int(v)
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character: \\ is not the start of \u
			continue
		}
		v := hex(i)
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if w := hex(i + 6); w < 0xDC00 || w > 0xDFFF {
				return true
			}
			i += 11
		case v >= 0xDC00 && v <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(CanonicalNumber(string(x)))
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	default:
		// Only the types encoding/json produces with UseNumber reach here.
		panic(fmt.Sprintf("canonical: unexpected %T", v))
	}
}

func writeString(b *strings.Builder, s string) {
	enc, _ := json.Marshal(s) // a Go string always marshals
	b.Write(enc)
}

// CanonicalNumber spells the JSON number literal s in one canonical way,
// exactly (no rounding through float64): sign, digits without leading or
// trailing zeros, and a decimal point or an exponent only where needed.
// A string that is not a JSON number is returned unchanged.
func CanonicalNumber(s string) string {
	neg := strings.HasPrefix(s, "-")
	body := strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(body), "e")
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expPart)
		if err != nil {
			return s
		}
		exp = e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return s
	}
	exp -= len(frac) // value = digits × 10^exp
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed

	var out string
	switch {
	case exp >= 0 && exp <= 21:
		out = digits + strings.Repeat("0", exp)
	case exp < 0 && -exp < len(digits):
		p := len(digits) + exp
		out = digits[:p] + "." + digits[p:]
	case exp < 0 && -exp-len(digits) <= 6:
		out = "0." + strings.Repeat("0", -exp-len(digits)) + digits
	default:
		// Scientific: one digit before the point.
		e := exp + len(digits) - 1
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		out += "e" + strconv.Itoa(e)
	}
	if neg {
		out = "-" + out
	}
	return out
}
