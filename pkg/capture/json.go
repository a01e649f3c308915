package capture

import (
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func validJSON(b []byte) bool { return gjson.ValidBytes(b) }

// has reports whether a JSON object holds a top-level field.
func has(obj []byte, field string) bool { return gjson.GetBytes(obj, escapePath(field)).Exists() }

// isDocumentWrapper reports whether a JSON object is an SQS ReceiveMessage
// response or a Lambda event: its events are in an array inside it.
func isDocumentWrapper(obj []byte) bool {
	return gjson.GetBytes(obj, "Messages").IsArray() || gjson.GetBytes(obj, "Records").IsArray()
}

func escapePath(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '*', '?', '|', '#', '@', '\\', '!', '=', '<', '>', '%':
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// payload returns the JSON a payload stands for: JSON text inside a string
// is decoded again (kcat and SQS carry JSON as strings); other text stays a
// JSON string.
func payload(r gjson.Result) []byte {
	switch r.Type {
	case gjson.String:
		s := r.Str
		if len(s) > 0 && (s[0] == '{' || s[0] == '[') && gjson.Valid(s) {
			return []byte(s)
		}
		return appendString(nil, s)
	case gjson.Null:
		if !r.Exists() {
			return []byte("null")
		}
	}
	return []byte(r.Raw)
}

// rawPayload is payload for bytes that are not JSON-quoted (base64-decoded data).
func rawPayload(b []byte) []byte {
	if len(b) > 0 && gjson.ValidBytes(b) {
		return b
	}
	return appendString(nil, string(b))
}

// envelope writes the JSON object the handler reads, field by field.
type envelope struct{ b []byte }

func newEnvelope(size int) *envelope {
	e := &envelope{b: make([]byte, 0, size+64)}
	e.b = append(e.b, '{')
	return e
}

func (e *envelope) key(k string) {
	if len(e.b) > 1 {
		e.b = append(e.b, ',')
	}
	e.b = appendString(e.b, k)
	e.b = append(e.b, ':')
}

func (e *envelope) str(k, v string) {
	e.key(k)
	e.b = appendString(e.b, v)
}

func (e *envelope) raw(k string, v []byte) {
	e.key(k)
	e.b = append(e.b, v...)
}

func (e *envelope) bytes() []byte { return append(e.b, '}') }

const hex = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
