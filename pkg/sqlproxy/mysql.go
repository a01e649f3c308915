package sqlproxy

// The relay of a MySQL or MariaDB connection. The watch, its boundaries,
// holds, lanes and transactions are the same as PostgreSQL's; what
// differs is how a statement is seen going out and its answer coming
// back.
//
// The handshake and authentication pass through byte for byte (any
// plugin: mysql_native_password, caching_sha2_password's fast path and
// full exchange, MariaDB's client_ed25519), but for the capabilities the
// greeting offers, narrowed so that the conversation stays readable
// (narrowGreeting). A client packet with sequence id 0 starts a command;
// any other continues an exchange the server asked for (authentication,
// a LOAD DATA LOCAL INFILE's file) and is relayed as it is. The server's
// packets are read against the command they answer, to know when each
// statement is answered and the server status it left: in a transaction
// or not.

import (
	"bufio"
	"context"
	"errors"
	"strconv"
	"sync/atomic"
)

// ListenMySQL starts a proxy for the MySQL or MariaDB server at upstream
// (host:port) on a free port of 127.0.0.1.
func ListenMySQL(upstream string) (*Proxy, error) {
	return listen(upstream, true)
}

// MySQL reports whether the proxy relays the MySQL protocol.
func (p *Proxy) MySQL() bool { return p.mysql }

// myConn is what a MySQL connection's two sides share.
type myConn struct {
	serverCaps   atomic.Uint32
	deprecateEOF atomic.Bool
	// Guarded by conn.mu.
	queue    []*myCommand
	prepared map[uint32]*myPrepared
	// noAutocommit: the server's last status said autocommit is off on
	// the connection (SET autocommit = 0, which drivers such as Python's
	// MySQLdb send as they connect): a statement outside a transaction
	// opens one, which lasts until a COMMIT or ROLLBACK.
	noAutocommit bool
}

// myPrepared is a statement the client prepared.
type myPrepared struct {
	text   string
	params int
	// Seen by the client side only: the parameter types the last
	// execute sent, and values sent as long data since.
	types []byte
	long  map[int][]byte
}

// myCommand is a command sent to the server, whose answer is awaited.
type myCommand struct {
	kind  byte
	text  string       // a prepare's statement
	stmts []*Statement // the statements it runs
}

// keepMySQL records a connection's server thread from its greeting.
func (p *Proxy) keepMySQL(id uint32) {
	p.mu.Lock()
	if p.backends == nil {
		p.backends = map[int32]Backend{}
	}
	p.backends[int32(id)] = Backend{PID: int32(id)}
	track := p.track
	p.mu.Unlock()
	if track != nil {
		track(int32(id), true)
	}
}

// errMySQLCancel: MySQL has no cancel request a proxy could forward
// without a password; a thread is ended with KILL on a connection of
// its own.
var errMySQLCancel = errors.New("a MySQL thread is not cancelled through the proxy: end it with KILL")

// serveMySQL relays a MySQL connection.
func (c *conn) serveMySQL() {
	defer c.close()
	server, err := c.p.dial(context.Background())
	if err != nil {
		return
	}
	c.mu.Lock()
	c.server = server
	c.my = &myConn{prepared: map[uint32]*myPrepared{}}
	c.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.fromServerMySQL()
		c.close()
	}()
	c.fromClientMySQL()
	c.close()
	<-done
}

// fromClientMySQL relays what the client sends, command by command.
func (c *conn) fromClientMySQL() {
	r := bufio.NewReaderSize(c.client, 32<<10)
	w := bufio.NewWriterSize(c.server, 32<<10)
	var buf []byte
	first := true
	for {
		pk, err := readPacket(r, buf)
		if err != nil {
			if err == errPacketLarge {
				c.p.broke(err)
			}
			return
		}
		if first {
			first = false
			caps := clientCaps(pk.payload)
			if caps&capSSL != 0 {
				// The greeting offered no TLS and the client asks for it
				// anyway: nothing it sends next could be relayed.
				c.p.tlsRefused.Add(1)
				return
			}
			c.my.deprecateEOF.Store(caps&c.my.serverCaps.Load()&capDeprecateEOF != 0)
		}
		if pk.seq == 0 && len(pk.payload) > 0 && !c.command(pk, w) {
			return
		}
		if _, err := w.Write(pk.raw); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
		if len(pk.raw) <= cap(buf) || len(pk.raw) < 1<<20 {
			buf = pk.raw[:0]
		}
	}
}

// command notes a command on its way to the server: its statements are
// counted (and held before, at a boundary), and what answer it awaits
// queued for the other side. It returns false when the connection is to
// end.
func (c *conn) command(pk myPacket, w *bufio.Writer) bool {
	pl := pk.payload
	cmd := &myCommand{kind: pl[0]}
	switch pl[0] {
	case comQuit, comStmtClose, comStmtSendLongData:
		// No answer comes.
		c.unanswered(pl)
		return true
	case comQuery:
		cmd.stmts = c.queryStatements(pl)
	case comStmtPrepare:
		cmd.text = string(pl[1:])
	case comStmtExecute:
		if st := c.executeStatement(pl); st != nil {
			cmd.stmts = []*Statement{st}
		}
	case comStmtReset:
		if id, ok := stmtID(pl); ok {
			c.mu.Lock()
			if ps := c.my.prepared[id]; ps != nil {
				ps.long = nil
			}
			c.mu.Unlock()
		}
	}
	for _, st := range cmd.stmts {
		if !c.send(st, w) {
			return false
		}
	}
	c.mu.Lock()
	c.my.queue = append(c.my.queue, cmd)
	c.mu.Unlock()
	return true
}

// unanswered notes a command the server does not answer: a closed
// prepared statement is forgotten, and the long data sent for a
// parameter is kept for the statement's next execute.
func (c *conn) unanswered(pl []byte) {
	id, ok := stmtID(pl)
	if !ok || pl[0] == comQuit {
		return
	}
	c.mu.Lock()
	ps := c.my.prepared[id]
	if pl[0] == comStmtClose {
		delete(c.my.prepared, id)
	}
	c.mu.Unlock()
	if ps != nil && pl[0] == comStmtSendLongData && len(pl) >= 7 {
		param := int(pl[5]) | int(pl[6])<<8
		if ps.long == nil {
			ps.long = map[int][]byte{}
		}
		ps.long[param] = append(ps.long[param], pl[7:]...)
	}
}

// queryStatements are the statements of a COM_QUERY, one per part of
// its text, each implicit when autocommit is off.
func (c *conn) queryStatements(pl []byte) []*Statement {
	parts := splitMySQL(string(pl[1:]))
	c.mu.Lock()
	implicit := c.my.noAutocommit
	c.mu.Unlock()
	var stmts []*Statement
	for i, text := range parts {
		st := &Statement{Text: text, Implicit: implicit}
		if len(parts) > 1 {
			st.Part, st.Parts = i+1, len(parts)
		}
		stmts = append(stmts, st)
	}
	return stmts
}

// executeStatement is the statement a COM_STMT_EXECUTE runs, with the
// values it bound when a watch is on, or nil for a statement the proxy
// did not see prepared.
func (c *conn) executeStatement(pl []byte) *Statement {
	id, _ := stmtID(pl)
	c.mu.Lock()
	ps := c.my.prepared[id]
	implicit := c.my.noAutocommit
	c.mu.Unlock()
	if ps == nil {
		return nil
	}
	st := &Statement{Text: ps.text, Extended: true, Binary: true, Name: strconv.FormatUint(uint64(id), 10), Implicit: implicit}
	values := executeValues(pl, ps.params, &ps.types, ps.long)
	ps.long = nil
	if c.p.current() != nil {
		st.values = values
		st.Params = mysqlParams(values, ps.types, ps.params)
	}
	return st
}

// nextCommand is the oldest command whose answer has not begun, or nil.
func (c *conn) nextCommand() *myCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.my.queue) == 0 {
		return nil
	}
	cmd := c.my.queue[0]
	c.my.queue = c.my.queue[1:]
	return cmd
}

// queued reports whether a command waits for its answer to begin.
func (c *conn) queued() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.my.queue) > 0
}

// fromServerMySQL relays what the server sends: its greeting, narrowed,
// the authentication, then the answers to the client's commands.
func (c *conn) fromServerMySQL() {
	r := bufio.NewReaderSize(c.server, 32<<10)
	w := bufio.NewWriterSize(c.client, 32<<10)
	if !c.handshakeMySQL(r, w) {
		return
	}
	var buf []byte
	var resp *myResponse
	for {
		pk, err := readPacket(r, buf)
		if err != nil {
			if err == errPacketLarge {
				c.p.broke(err)
			}
			return
		}
		if resp != nil && resp.state == rsUnknown && c.queued() {
			resp = nil
		}
		if resp == nil {
			if cmd := c.nextCommand(); cmd != nil {
				resp = newResponse(cmd)
			}
		}
		var held *Statement
		if resp != nil {
			done, final := resp.step(c, pk.payload)
			if done {
				resp = nil
			}
			if final != nil && final.holdAnswer {
				held = final
			}
		}
		if held != nil && !held.awaitRelease(w) {
			return
		}
		// Relayed here, not through relayMySQL: this runs for every
		// packet, and the call would not be inlined.
		if _, err := w.Write(pk.raw); err != nil {
			return
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
		if len(pk.raw) < 1<<20 {
			buf = pk.raw[:0]
		}
	}
}

// relayMySQL passes a server's packet on to the client, flushed once
// nothing more is buffered. It returns false when the client is gone.
func relayMySQL(r *bufio.Reader, w *bufio.Writer, pk myPacket) bool {
	if _, err := w.Write(pk.raw); err != nil {
		return false
	}
	return r.Buffered() > 0 || w.Flush() == nil
}

// handshakeMySQL relays the server's greeting, narrowed, and the
// authentication that follows it. It returns false when the connection
// is to end.
func (c *conn) handshakeMySQL(r *bufio.Reader, w *bufio.Writer) bool {
	pk, err := readPacket(r, nil)
	if err != nil {
		return false
	}
	if g, ok := narrowGreeting(pk.payload); ok {
		c.my.serverCaps.Store(g.caps &^ capCleared)
		c.pid.Store(int32(g.connID))
		c.p.keepMySQL(g.connID)
	}
	if !relayMySQL(r, w, pk) {
		return false
	}
	// Authentication, whatever the plugin: over at the server's OK or
	// ERR (an auth switch starts 0xfe, more data 0x01).
	for {
		pk, err := readPacket(r, nil)
		if err != nil || !relayMySQL(r, w, pk) {
			return false
		}
		if len(pk.payload) > 0 && pk.payload[0] == 0x00 {
			if _, status, ok := okPacket(pk.payload); ok {
				c.settleStatus(status)
			}
			return true
		}
		if len(pk.payload) > 0 && pk.payload[0] == 0xff {
			return false
		}
	}
}

// txStatus is a MySQL server status as a ReadyForQuery's: 'T' in a
// transaction, 'I' outside.
func txStatus(status uint16) byte {
	if status&serverInTrans != 0 {
		return 'T'
	}
	return 'I'
}

// States of an answer being read.
const (
	rsStart         = iota // a result's first packet: OK, ERR, LOCAL INFILE or a column count
	rsInfile               // the OK or ERR after a LOCAL INFILE's file
	rsColumns              // column definitions
	rsColumnsEOF           // the EOF after them
	rsRows                 // rows, up to an EOF, OK or ERR
	rsPrepare              // a prepare's first packet
	rsPrepParams           // its parameter definitions
	rsPrepParamsEOF        // the EOF after them
	rsPrepCols             // its column definitions
	rsPrepColsEOF          // the EOF after them
	rsFetch                // rows of a cursor
	rsFieldList            // COM_FIELD_LIST's column definitions
	rsAuth                 // COM_CHANGE_USER's authentication
	rsOne                  // one packet
	rsUnknown              // a command the proxy does not read: over at the next
)

// myResponse follows the server's answer to one command.
type myResponse struct {
	cmd   *myCommand
	state int
	// left is how many definitions are still to come.
	left uint64
	rows int
	// part is the statement of a multi-statement query the next result
	// answers; first the first answer a last statement got, when it had
	// several (a CALL's result sets, then its OK).
	part  int
	first string
	// params and cols of a prepared statement.
	id           uint32
	params, cols int
}

func newResponse(cmd *myCommand) *myResponse {
	r := &myResponse{cmd: cmd}
	switch cmd.kind {
	case comQuery, comStmtExecute, comProcessInfo:
		r.state = rsStart
	case comStmtPrepare:
		r.state = rsPrepare
	case comStmtFetch:
		r.state = rsFetch
	case comFieldList:
		r.state = rsFieldList
	case comChangeUser:
		r.state = rsAuth
	case comBinlogDump, comBinlogDumpGTID, comRegisterSlave:
		r.state = rsUnknown
	default:
		// COM_PING, COM_INIT_DB, COM_STMT_RESET, COM_STATISTICS,
		// COM_PROCESS_KILL, COM_RESET_CONNECTION, COM_SET_OPTION,
		// COM_DEBUG, COM_REFRESH: an OK, an EOF, an ERR or a string.
		r.state = rsOne
		if cmd.kind > 0x1f {
			r.state = rsUnknown
		}
	}
	return r
}

// step follows one packet of the answer. done: the answer is complete;
// final: the statement (the command's last) answered with this packet.
func (r *myResponse) step(c *conn, pl []byte) (done bool, final *Statement) {
	if len(pl) == 0 {
		return false, nil
	}
	eof := c.my.deprecateEOF.Load()
	isErr := pl[0] == 0xff
	switch r.state {
	case rsStart, rsInfile, rsColumns, rsColumnsEOF, rsRows:
		return r.resultStep(c, pl, eof, isErr)
	case rsAuth, rsOne:
		return r.endStep(c, pl), nil
	case rsPrepare:
		id, cols, params, ok := prepareOK(pl)
		if !ok {
			return true, nil
		}
		c.mu.Lock()
		c.my.prepared[id] = &myPrepared{text: r.cmd.text, params: params}
		c.mu.Unlock()
		r.id, r.params, r.cols = id, params, cols
		return r.prepNext(eof, rsPrepare), nil
	case rsPrepParams, rsPrepCols:
		if r.left--; r.left == 0 {
			return r.prepNext(eof, r.state), nil
		}
	case rsPrepParamsEOF, rsPrepColsEOF:
		return r.prepNext(eof, r.state), nil
	case rsFetch:
		if isErr || isEOF(pl, eof) {
			if !isErr {
				c.settleStatus(endStatus(pl, eof))
			}
			return true, nil
		}
	case rsFieldList:
		return isErr || isEOF(pl, eof), nil
	}
	return false, nil
}

// resultStep follows a packet of a statement's answer: an OK, an ERR, or
// a result set (its column count, columns, rows and end).
func (r *myResponse) resultStep(c *conn, pl []byte, eof, isErr bool) (done bool, final *Statement) {
	switch r.state {
	case rsStart, rsInfile:
		switch {
		case pl[0] == 0x00:
			affected, status, ok := okPacket(pl)
			if !ok {
				r.state = rsUnknown
				return false, nil
			}
			return r.result(c, r.okAnswer(affected), false, status, true, 0)
		case isErr:
			code, _ := errPacket(pl)
			return r.result(c, "ERROR "+strconv.Itoa(int(code)), true, 0, false, code)
		case pl[0] == 0xfb && r.state == rsStart:
			// LOAD DATA LOCAL INFILE: the client sends the file, then
			// the server its OK or ERR.
			r.state = rsInfile
			return false, nil
		}
		n, _, ok := lenencInt(pl)
		if !ok || n == 0 {
			r.state = rsUnknown
			return false, nil
		}
		r.left, r.rows, r.state = n, 0, rsColumns
	case rsColumns:
		if r.left--; r.left == 0 {
			r.state = rsRows
			if !eof {
				r.state = rsColumnsEOF
			}
		}
	case rsColumnsEOF:
		if isErr {
			code, _ := errPacket(pl)
			return r.result(c, "ERROR "+strconv.Itoa(int(code)), true, 0, false, code)
		}
		if status := eofStatus(pl); status&serverCursorExists != 0 {
			// Rows come with COM_STMT_FETCH.
			return r.result(c, "SELECT (cursor)", false, status, true, 0)
		}
		r.state = rsRows
	case rsRows:
		switch {
		case isErr:
			code, _ := errPacket(pl)
			return r.result(c, "ERROR "+strconv.Itoa(int(code)), true, 0, false, code)
		case isEOF(pl, eof):
			return r.result(c, "SELECT "+strconv.Itoa(r.rows), false, endStatus(pl, eof), true, 0)
		}
		r.rows++
	}
	return false, nil
}

// endStep follows the one packet that ends an authentication or another
// command, and reports whether it did.
func (r *myResponse) endStep(c *conn, pl []byte) bool {
	switch r.state {
	case rsAuth:
		switch pl[0] {
		case 0x00:
			c.mu.Lock()
			clear(c.my.prepared)
			c.mu.Unlock()
			if _, status, ok := okPacket(pl); ok {
				c.settleStatus(status)
			}
			return true
		case 0xff:
			return true
		}
	case rsOne:
		if r.cmd.kind == comResetConnection && pl[0] == 0x00 {
			// The server forgot the connection's prepared statements.
			c.mu.Lock()
			clear(c.my.prepared)
			c.mu.Unlock()
		}
		switch {
		case pl[0] == 0x00:
			if _, status, ok := okPacket(pl); ok {
				c.settleStatus(status)
			}
		case pl[0] == 0xfe && len(pl) < 9:
			c.settleStatus(eofStatus(pl))
		}
		return true
	}
	return false
}

// prepNext moves a prepare's answer past the part from: parameter
// definitions and their EOF, then column definitions and theirs. It
// reports whether the answer is over.
func (r *myResponse) prepNext(eof bool, from int) bool {
	switch from {
	case rsPrepare:
		if r.params > 0 {
			r.state, r.left = rsPrepParams, uint64(r.params)
			return false
		}
		return r.prepNext(eof, rsPrepParamsEOF)
	case rsPrepParams:
		if !eof {
			r.state = rsPrepParamsEOF
			return false
		}
		return r.prepNext(eof, rsPrepParamsEOF)
	case rsPrepParamsEOF:
		if r.cols > 0 {
			r.state, r.left = rsPrepCols, uint64(r.cols)
			return false
		}
		return true
	case rsPrepCols:
		if !eof {
			r.state = rsPrepColsEOF
			return false
		}
	}
	return true
}

// okAnswer is the answer an OK gives the statement the result is for.
func (r *myResponse) okAnswer(affected uint64) string {
	if r.part < len(r.cmd.stmts) {
		return mysqlAnswer(r.cmd.stmts[r.part].Text, affected)
	}
	return "OK"
}

// deadlock is the error with which InnoDB rolls a transaction back.
const deadlock = 1213

// result ends one result of a query or execute: with more to come (the
// server status says so) it answers the next statement of a
// multi-statement query; without, it answers the command's statements
// still unanswered, the last with this answer — those after an error did
// not run.
func (r *myResponse) result(c *conn, answer string, isErr bool, status uint16, known bool, code uint16) (bool, *Statement) {
	stmts := r.cmd.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	if !isErr && status&serverMoreResults != 0 {
		switch {
		case r.part < len(stmts)-1:
			c.finish(stmts[r.part], answer)
			r.part++
		case r.first == "":
			r.first = answer
		}
		r.state = rsStart
		return false, nil
	}
	var final *Statement
	if n := len(stmts); n > 0 {
		for i := r.part; i < n; i++ {
			a := answer
			switch {
			case i == n-1 && !isErr && r.first != "":
				a = r.first
			case i > r.part && isErr:
				a = "not run (an earlier error)"
			case i < n-1 && !isErr:
				// The server ran fewer statements than the proxy cut the
				// query into: what answered is the last one's.
				a = ""
			}
			c.finish(stmts[i], a)
		}
		final = stmts[n-1]
	}
	switch {
	case known:
		c.settleMy(status)
	case code == deadlock:
		c.settleTx('I')
	}
	return true, final
}

// finish gives a statement its answer and drops it from those pending;
// c.mu is held.
func (c *conn) finish(st *Statement, answer string) {
	st.finish(answer)
	for i, p := range c.pending {
		if p == st {
			c.pending = append(c.pending[:i], c.pending[i+1:]...)
			break
		}
	}
}

// settleStatus takes the server's status for the transaction and
// autocommit.
func (c *conn) settleStatus(status uint16) {
	c.mu.Lock()
	c.settleMy(status)
	c.mu.Unlock()
}

// settleMy is settleStatus with c.mu held.
func (c *conn) settleMy(status uint16) {
	c.settleTx(txStatus(status))
	c.my.noAutocommit = status&serverAutocommit == 0
}
