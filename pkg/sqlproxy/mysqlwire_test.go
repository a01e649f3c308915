package sqlproxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
)

// frame is a payload as physical packets from sequence id seq on, cut
// at 16 MiB - 1 as the protocol cuts it.
func frame(seq byte, payload []byte) []byte {
	var out []byte
	for {
		n := min(len(payload), maxPayload)
		out = append(out, byte(n), byte(n>>8), byte(n>>16), seq)
		out = append(out, payload[:n]...)
		payload = payload[n:]
		seq++
		if n < maxPayload {
			return out
		}
	}
}

func TestReadPacket(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, maxPayload)
	tests := []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"query", append([]byte{comQuery}, "SELECT 1"...)},
		{"exactly one full packet, then an empty one", big},
		{"continued", append(append([]byte{}, big...), "tail"...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire := frame(3, tt.payload)
			p, err := readPacket(bytes.NewReader(wire), nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.seq != 3 || !bytes.Equal(p.raw, wire) || !bytes.Equal(p.payload, tt.payload) {
				t.Fatalf("seq %d, %d raw bytes (want %d), %d payload bytes (want %d)", p.seq, len(p.raw), len(wire), len(p.payload), len(tt.payload))
			}
		})
	}
	if _, err := readPacket(bytes.NewReader(frame(0, big)[:100]), nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut packet: %v, want unexpected EOF", err)
	}
}

func TestSplitMySQL(t *testing.T) {
	tests := []struct {
		q    string
		want []string
	}{
		{"SELECT 1", []string{"SELECT 1"}},
		{"SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"SELECT 'a;b'; SELECT \"c;d\"", []string{"SELECT 'a;b'", "SELECT \"c;d\""}},
		{`SELECT 'it\'s;'; SELECT 2`, []string{`SELECT 'it\'s;'`, "SELECT 2"}},
		{"SELECT `a;b` FROM t; SELECT 2", []string{"SELECT `a;b` FROM t", "SELECT 2"}},
		{"SELECT 1 # one; two\n; SELECT 2", []string{"SELECT 1 # one; two", "SELECT 2"}},
		{"SELECT 1 -- one; two\n; SELECT 2", []string{"SELECT 1 -- one; two", "SELECT 2"}},
		{"SELECT 1--1; SELECT 2", []string{"SELECT 1--1", "SELECT 2"}},
		{"SELECT /* a; /* b; */ 1; SELECT 2", []string{"SELECT /* a; /* b; */ 1", "SELECT 2"}},
		{"; ;# nothing\n", nil},
	}
	for _, tt := range tests {
		if got := splitMySQL(tt.q); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("splitMySQL(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
}

// greetingOf is a protocol 10 handshake offering caps, MariaDB's way
// (extended capabilities in the last 4 reserved bytes) when ext is not 0.
func greetingOf(id, caps, ext uint32) []byte {
	b := []byte{greetingProtocol10}
	b = append(b, "10.11.19-MariaDB\x00"...)
	b = binary.LittleEndian.AppendUint32(b, id)
	b = append(b, "12345678"...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 6)...)
	b = binary.LittleEndian.AppendUint32(b, ext)
	b = append(b, "123456789012\x00mysql_native_password\x00"...)
	return b
}

func TestNarrowGreeting(t *testing.T) {
	caps := uint32(capProtocol41 | capSSL | capCompress | capDeprecateEOF | capMultiStatements | capQueryAttributes)
	g := greetingOf(42, caps, 0x1f)
	got, ok := narrowGreeting(g)
	if !ok || got.connID != 42 || got.caps != caps {
		t.Fatalf("read %+v %v, want thread 42 and caps %#x", got, ok, caps)
	}
	again, _ := narrowGreeting(g)
	if want := caps &^ capCleared; again.caps != want {
		t.Errorf("narrowed caps %#x, want %#x (TLS, compression and query attributes cleared)", again.caps, want)
	}
	if ext := binary.LittleEndian.Uint32(g[len(g)-len("123456789012\x00mysql_native_password\x00")-4:]); ext != 0 {
		t.Errorf("MariaDB's extended capabilities %#x left offered", ext)
	}
	if _, ok := narrowGreeting([]byte{0xff, 0x10, 0x04, 'T', 'o', 'o'}); ok {
		t.Error("an error packet read as a greeting")
	}
}

func TestExecuteValues(t *testing.T) {
	exec := func(nulls byte, types []byte, values ...[]byte) []byte {
		b := []byte{comStmtExecute, 1, 0, 0, 0, 0, 1, 0, 0, 0, nulls}
		if types != nil {
			b = append(append(b, 1), types...)
		} else {
			b = append(b, 0)
		}
		for _, v := range values {
			b = append(b, v...)
		}
		return b
	}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	i64 := binary.LittleEndian.AppendUint64(nil, uint64(1<<40))
	neg := []byte{0xfe, 0xff, 0xff, 0xff}
	var types []byte
	got := executeValues(exec(0b010, []byte{0xfe, 0, typeNull, 0, typeLongLong, 0, typeLong, 0}, str("evt-1"), i64, neg), 4, &types, nil)
	want := []string{"evt-1", "", "1099511627776", "-2"}
	if len(got) != 4 || got[1] != nil {
		t.Fatalf("values %q", got)
	}
	for i, w := range want {
		if string(got[i]) != w {
			t.Errorf("value %d = %q, want %q", i, got[i], w)
		}
	}
	// No types: those of the last execute.
	got = executeValues(exec(0, nil, str("evt-2"), i64, i64, neg), 4, &types, nil)
	if len(got) != 4 || string(got[0]) != "evt-2" {
		t.Fatalf("with the types kept: %q", got)
	}
	// Sent as long data: not in the packet.
	var t2 []byte
	got = executeValues(exec(0, []byte{0xfc, 0, 0xfe, 0}, str("O-1")), 2, &t2, map[int][]byte{0: []byte("blob")})
	if len(got) != 2 || string(got[0]) != "blob" || string(got[1]) != "O-1" {
		t.Fatalf("with long data: %q", got)
	}
}

func TestInserted(t *testing.T) {
	for answer, want := range map[string]int{"INSERT 0 1": 1, "INSERT 2": 2, "INSERT 0 0": 0, "INSERT 0": 0, "UPDATE 1": 0, "ERROR 1062": 0} {
		if got := Inserted(answer); got != want {
			t.Errorf("Inserted(%q) = %d, want %d", answer, got, want)
		}
	}
}

// okOf is an OK packet.
func okOf(affected byte, status uint16) []byte {
	return binary.LittleEndian.AppendUint16([]byte{0, affected, 0, byte(status), byte(status >> 8)}, 0)[:7]
}

func eofOf(status uint16) []byte {
	return []byte{0xfe, 0, 0, byte(status), byte(status >> 8)}
}

// TestResponses: the answers a command's packets give its statements,
// and where the answer ends.
func TestResponses(t *testing.T) {
	col := []byte("\x03def\x00\x00\x00\x01k\x00\x0c\x08\x00\x01\x00\x00\x00\xfd\x00\x00\x00\x00\x00")
	row := []byte("\x01a")
	errPk := []byte("\xff\x26\x04#23000Duplicate")
	tests := []struct {
		name    string
		kind    byte
		texts   []string
		eofGone bool
		packets [][]byte
		want    []string // the answers
		endsAt  int      // index of the packet that ends the answer
		inTx    bool
	}{
		{"insert", comQuery, []string{"INSERT INTO t VALUES (1)"}, false, [][]byte{okOf(1, 2)}, []string{"INSERT 1"}, 0, false},
		{"in a transaction", comQuery, []string{"UPDATE t SET n = 1"}, false, [][]byte{okOf(3, 3)}, []string{"UPDATE 3"}, 0, true},
		{"rows", comQuery, []string{"SELECT k FROM t"}, false, [][]byte{{1}, col, eofOf(2), row, row, eofOf(2)}, []string{"SELECT 2"}, 5, false},
		{"rows, EOF deprecated", comQuery, []string{"SELECT k FROM t"}, true, [][]byte{{1}, col, row, append([]byte{0xfe}, okOf(0, 2)[1:]...)}, []string{"SELECT 1"}, 3, false},
		{"error", comQuery, []string{"INSERT INTO t VALUES (1)"}, false, [][]byte{errPk}, []string{"ERROR 1062"}, 0, false},
		{"multi", comQuery, []string{"INSERT INTO t VALUES (1)", "SELECT k FROM t", "DELETE FROM t"}, false,
			[][]byte{okOf(1, 2|serverMoreResults), {1}, col, eofOf(2), row, eofOf(2 | serverMoreResults), okOf(1, 2)}, []string{"INSERT 1", "SELECT 1", "DELETE 1"}, 6, false},
		{"multi with an error", comQuery, []string{"INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (1)", "SELECT 1"}, false,
			[][]byte{okOf(1, 2|serverMoreResults), errPk}, []string{"INSERT 1", "ERROR 1062", "not run (an earlier error)"}, 1, false},
		{"local infile", comQuery, []string{"LOAD DATA LOCAL INFILE 'f' INTO TABLE t"}, false, [][]byte{append([]byte{0xfb}, "f"...), okOf(2, 2)}, []string{"LOAD 2"}, 1, false},
		{"prepare", comStmtPrepare, nil, false, [][]byte{{0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0}, col, col, eofOf(2), col, eofOf(2)}, nil, 5, false},
		{"prepare, EOF deprecated", comStmtPrepare, nil, true, [][]byte{{0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0}, col, col, col}, nil, 3, false},
		{"prepare error", comStmtPrepare, nil, false, [][]byte{errPk}, nil, 0, false},
		{"ping", 0x0e, nil, false, [][]byte{okOf(0, 2)}, nil, 0, false},
		{"process info", comProcessInfo, nil, false, [][]byte{{1}, col, eofOf(2), row, eofOf(2)}, nil, 4, false},
		{"change user, auth switch", comChangeUser, nil, false, [][]byte{[]byte("\xfemysql_native_password\x00abc"), okOf(0, 2)}, nil, 1, false},
		{"cursor", comStmtExecute, []string{"SELECT k FROM t WHERE k = ?"}, false, [][]byte{{1}, col, eofOf(2 | serverCursorExists)}, []string{"SELECT (cursor)"}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conn{p: &Proxy{mysql: true}, my: &myConn{prepared: map[uint32]*myPrepared{}}}
			c.my.deprecateEOF.Store(tt.eofGone)
			cmd := &myCommand{kind: tt.kind}
			for i, text := range tt.texts {
				st := &Statement{Text: text}
				if len(tt.texts) > 1 {
					st.Part, st.Parts = i+1, len(tt.texts)
				}
				cmd.stmts = append(cmd.stmts, st)
				c.pending = append(c.pending, st)
			}
			r := newResponse(cmd)
			ended := -1
			for i, pk := range tt.packets {
				if done, _ := r.step(c, pk); done && ended < 0 {
					ended = i
				}
			}
			if ended != tt.endsAt {
				t.Errorf("the answer ended at packet %d, want %d", ended, tt.endsAt)
			}
			for i, st := range cmd.stmts {
				if st.Answer != tt.want[i] {
					t.Errorf("statement %d answered %q, want %q", i+1, st.Answer, tt.want[i])
				}
			}
			if len(c.pending) != 0 {
				t.Errorf("%d statements still pending", len(c.pending))
			}
			if c.tx.open != tt.inTx {
				t.Errorf("in a transaction: %v, want %v", c.tx.open, tt.inTx)
			}
		})
	}
}

// FuzzMySQLWire feeds the framing and the answer reader what a server
// might send after each kind of command: nothing may panic, each packet
// read is the bytes it came as, and a statement gets at most one answer
// left pending.
func FuzzMySQLWire(f *testing.F) {
	f.Add(byte(comQuery), false, bytes.Join([][]byte{frame(1, []byte{1}), frame(2, []byte("\x03def\x00\x00\x00\x01k\x00")), frame(3, eofOf(2)), frame(4, []byte("\x01a")), frame(5, eofOf(2))}, nil))
	f.Add(byte(comQuery), true, frame(1, okOf(1, 2|serverMoreResults)))
	f.Add(byte(comStmtPrepare), false, frame(1, []byte{0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0}))
	f.Add(byte(comQuery), false, frame(1, []byte("\xff\x26\x04#23000Duplicate")))
	f.Add(byte(comQuery), false, frame(1, append([]byte{0xfb}, "file"...)))
	f.Add(byte(comChangeUser), false, frame(1, []byte("\xfemysql_native_password\x00abc")))
	f.Add(byte(comStmtExecute), false, frame(0, greetingOf(7, capProtocol41|capSSL, 3)))
	f.Fuzz(func(t *testing.T, kind byte, eofGone bool, data []byte) {
		narrowGreeting(bytes.Clone(data))
		c := &conn{p: &Proxy{mysql: true}, my: &myConn{prepared: map[uint32]*myPrepared{}}}
		c.my.deprecateEOF.Store(eofGone)
		cmd := &myCommand{kind: kind}
		for _, text := range splitMySQL(string(data)) {
			if !strings.Contains(string(data), text) || blankMySQL(text) {
				t.Fatalf("statement %q is not a part of the query, or blank", text)
			}
			st := &Statement{Text: text}
			cmd.stmts = append(cmd.stmts, st)
			c.pending = append(c.pending, st)
		}
		r := newResponse(cmd)
		rd := bytes.NewReader(data)
		for {
			before := rd.Len()
			p, err := readPacket(rd, nil)
			if err != nil {
				break
			}
			if !bytes.Equal(p.raw, data[len(data)-before:len(data)-before+len(p.raw)]) {
				t.Fatal("a packet read is not the bytes it came as")
			}
			if r != nil {
				if done, _ := r.step(c, p.payload); done {
					r = nil
				}
			}
		}
		var types []byte
		executeValues(data, int(kind)%40, &types, nil)
		okPacket(data)
		lenencInt(data)
	})
}

// TestForgottenStatements: after COM_RESET_CONNECTION or COM_CHANGE_USER
// the server has forgotten the prepared statements, and so does the
// proxy: an id it gives again is not shown with the old text.
func TestForgottenStatements(t *testing.T) {
	for _, kind := range []byte{comResetConnection, comChangeUser} {
		c := &conn{p: &Proxy{mysql: true}, my: &myConn{prepared: map[uint32]*myPrepared{1: {text: "SELECT 1"}}}}
		if done, _ := newResponse(&myCommand{kind: kind}).step(c, okOf(0, 2)); !done {
			t.Errorf("command %#x: its OK did not end the answer", kind)
		}
		if len(c.my.prepared) != 0 {
			t.Errorf("command %#x: prepared statements kept: %v", kind, c.my.prepared)
		}
	}
}
