package sqlproxy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzWire feeds the proxy's readers and parsers what a client or a
// server might send: a startup packet, then messages. Nothing may panic,
// every message read must be the bytes it came as, and a query's
// statements are each a part of it, none blank.
func FuzzWire(f *testing.F) {
	msg := func(typ byte, body string) []byte {
		b := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
		return append(b, body...)
	}
	start := []byte{0, 0, 0, 8, 0, 3, 0, 0}
	f.Add(append(start, msg('Q', "SELECT 1\x00")...))
	f.Add(append(start, bytes.Join([][]byte{msg('P', "s1\x00INSERT INTO t VALUES ($1)\x00\x00\x00"), msg('B', "\x00s1\x00\x00\x00\x00\x00\x00\x00"), msg('E', "\x00\x00\x00\x00\x00"), msg('S', "")}, nil)...))
	f.Add(append(start, msg('C', "INSERT 0 1\x00")...))
	f.Add(append(start, msg('E', "SERROR\x00C23505\x00Mduplicate\x00\x00")...))
	f.Add(append(start, msg('K', "\x00\x00\x01\x02\x00\x00\x00\x03")...))
	// Authentication, both ways: SCRAM-SHA-256's AuthenticationSASL,
	// SASLInitialResponse, AuthenticationSASLContinue, SASLResponse,
	// AuthenticationSASLFinal and AuthenticationOk; md5's salt and answer.
	f.Add(append(start, bytes.Join([][]byte{
		msg('R', "\x00\x00\x00\x0aSCRAM-SHA-256\x00\x00"),
		msg('p', "SCRAM-SHA-256\x00\x00\x00\x00\x20n,,n=,r=rOprNGfwEbeRWgbNEkqO"),
		msg('R', "\x00\x00\x00\x0br=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
		msg('p', "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
		msg('R', "\x00\x00\x00\x0cv=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
		msg('R', "\x00\x00\x00\x00"),
	}, nil)...))
	f.Add(append(start, msg('R', "\x00\x00\x00\x05\x93\x1e\x5a\x01")...))
	f.Add(append(start, msg('p', "md53175bce1d3201d16594cebf9d7eb3f9d\x00")...))
	f.Add(append(start, msg('p', "SCRAM-SHA-256\x00\xff\xff\xff\xff")...))
	f.Add([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f})
	f.Add([]byte{0, 0, 0, 3})
	f.Add(append(start, 'Q', 0xff, 0xff, 0xff, 0xff))
	f.Add(append(start, 'Q', 0x10, 0, 0, 0))
	f.Add(append(start, msg('Q', "BEGIN; INSERT INTO t VALUES ('a;b', $$;$$, E'\\';'); /* ; /* ; */ */ COMMIT;\x00")...))
	f.Add(append(start, msg('Q', "/* app='x' */ INSERT INTO t VALUES (1); -- ;\nSELECT $t$ $$ ; $t$\x00")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		if _, err := readStartup(r); err != nil {
			return
		}
		var buf []byte
		for {
			before := r.Len()
			m, err := readMessage(r, buf)
			if err != nil {
				var big *tooLarge
				if err != io.EOF && err != io.ErrUnexpectedEOF && err != errFraming && !errors.As(err, &big) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			consumed := before - r.Len()
			if len(m.raw) != consumed || int(be32(m.raw[1:5]))+1 != len(m.raw) {
				t.Fatalf("message of %d bytes from %d read", len(m.raw), consumed)
			}
			queryText(m)
			parseMsg(m)
			bindMsg(m)
			executeMsg(m)
			closeMsg(m)
			commandTag(m)
			errorCode(m)
			backendKey(m)
			Words(string(m.body()))
			Matches(string(m.body()), "insert into")
			Blank(string(m.body()))
			text := queryText(m)
			for _, part := range splitStatements(text) {
				if Blank(part) || !strings.Contains(text, part) {
					t.Fatalf("statement %q of %q is blank or not in it", part, text)
				}
			}
			if rest := skipComments(text); !strings.HasSuffix(text, rest) {
				t.Fatalf("skipComments(%q) = %q, not its end", text, rest)
			}
			buf = m.raw[:0]
		}
	})
}

// FuzzWithParam: whatever the startup packet, setting a parameter either
// leaves it as it was or makes a packet whose length is right, that ends
// as the protocol says, and that holds every byte it held before.
func FuzzWithParam(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x17\x00\x03\x00\x00user\x00bob\x00\x00"))
	f.Add([]byte("\x00\x00\x00\x09\x00\x03\x00\x00\x00"))
	f.Add([]byte("\x00\x00\x00\x10\x00\x03\x00\x00user\x00bo"))
	f.Add([]byte("\x00\x00\x00\x08\x04\xd2\x16\x2f"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := withParam(raw, checkParam, "1000")
		if bytes.Equal(out, raw) {
			return
		}
		if int(binary.BigEndian.Uint32(out[:4])) != len(out) || out[len(out)-1] != 0 || len(out) > maxStartup {
			t.Fatalf("withParam(%q) = %q: length or end wrong", raw, out)
		}
		if !bytes.Equal(out[4:len(raw)-1], raw[4:len(raw)-1]) || !bytes.HasSuffix(out, []byte(checkParam+"\x001000\x00\x00")) {
			t.Fatalf("withParam(%q) = %q", raw, out)
		}
	})
}
