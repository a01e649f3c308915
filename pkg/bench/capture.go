// Package bench makes the captures replay is measured on and compares a
// replay with a hand-written consumer replaying the same file.
//
// It imports no other package of this module.
package bench

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
)

// IDs is how the events of a generated capture are named.
type IDs string

// The id shapes a capture can have.
const (
	// UUID ids are random version-4 UUIDs, as real producers send: every
	// insert lands somewhere inside the indexes keyed by them.
	UUID IDs = "uuid"
	// Sequential ids are evt-1, evt-2 …: every insert appends at the end.
	Sequential IDs = "sequential"
)

// ParseIDs reads an id shape by name.
func ParseIDs(s string) (IDs, error) {
	switch IDs(s) {
	case UUID, Sequential:
		return IDs(s), nil
	}
	return "", fmt.Errorf("unknown id shape %q (want %s or %s)", s, UUID, Sequential)
}

// window is how far back a redelivery reaches: a redelivered event is one
// of the last window events.
const window = 1000

// Redeliveries is the share of a capture's lines that repeat an earlier
// event (same id, same payload).
const Redeliveries = 0.2

// WriteCapture writes n CloudEvents NDJSON lines, of which about a fifth
// are redeliveries of one of the last thousand events. Event i's order is
// order-i; its id is evt-i or a random UUID. The same seed writes the same
// file.
func WriteCapture(w io.Writer, n int, seed uint64, ids IDs) error {
	if _, err := ParseIDs(string(ids)); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	// Only UUIDs draw from this one, so the sequential capture is the
	// same file it always was.
	idRng := rand.New(rand.NewPCG(seed, 2))
	var recent [window][36]byte // UUIDs of the last events, by number mod window
	next := 0
	var line []byte
	for i := 0; i < n; i++ {
		ev := next
		if next > 0 && rng.Float64() < Redeliveries {
			ev = next - 1 - rng.IntN(min(next, window))
		} else {
			next++
			if ids == UUID {
				recent[ev%window] = uuid4(idRng)
			}
		}
		line = append(line[:0], `{"specversion":"1.0","id":"`...)
		if ids == UUID {
			line = append(line, recent[ev%window][:]...)
		} else {
			line = append(line, "evt-"...)
			line = strconv.AppendInt(line, int64(ev), 10)
		}
		line = append(line, `","source":"/orders","type":"order.created","time":"2026-11-01T10:00:00Z","data":{"orderId":"order-`...)
		line = strconv.AppendInt(line, int64(ev), 10)
		line = append(line, "\"}}\n"...)
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// uuid4 draws a random (version 4, RFC 9562 variant) UUID.
func uuid4(rng *rand.Rand) (s [36]byte) {
	var b [16]byte
	for i := 0; i < 16; i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return s
}
