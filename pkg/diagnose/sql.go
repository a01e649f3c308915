package diagnose

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
)

// kind is what a statement does, as far as the patterns need to know.
type kind int

const (
	other kind = iota
	begin
	commit
	rollback
	read
	write
	autocommitOff // MySQL's SET autocommit = 0: each statement opens a transaction
	autocommitOn
)

// stmt is one statement of a trace, read: what it does, to which
// tables, what came back, and in which transaction of its worker.
type stmt struct {
	n      int // its number in the trace, 1-based
	worker int
	kind   kind
	verb   string   // "insert", "update", "delete" for a write
	tables []string // the tables it writes (a write) or reads (a read)
	rows   int      // rows the answer counts; -1 when it gave none
	ran    bool     // it reached the database and was answered
	// guard: an insert that skips a row whose key exists (ON CONFLICT
	// DO NOTHING, INSERT IGNORE); upsert: one that changes it instead.
	guard, upsert bool
	additive      bool // an upsert that adds to a column (x = x + …)
	tx            int  // its worker's transaction (0: autocommit)
	// committed is the number of the statement that committed it: its
	// transaction's COMMIT, itself in autocommit; 0 when nothing did.
	committed int
	killed    bool // the kill came here
	held      bool // a race held its worker here, then let it go
	again     bool // it is the redelivery's, after the kill and the restart
	text      string
	params    []consumer.Param
}

var (
	writeRE      = regexp.MustCompile(`^(?:with\b.*?\)\s*)?(insert|replace)\s+(?:ignore\s+)?(?:into\s+)?([\w."` + "`" + `]+)|^(update)\s+(?:only\s+)?([\w."` + "`" + `]+)|^(delete)\s+from\s+(?:only\s+)?([\w."` + "`" + `]+)`)
	fromRE       = regexp.MustCompile(`\b(?:from|join)\s+(?:only\s+)?([\w."` + "`" + `]+)`)
	answerRE     = regexp.MustCompile(`(\d+)\s*(?:rows?)?\s*(?:affected)?$`)
	autocommitRE = regexp.MustCompile(`^set\s+(?:session\s+|@@(?:session\.)?)?autocommit\s*=\s*'?(\w+)`)
	setRE        = regexp.MustCompile(`\b(?:do\s+update\s+set|on\s+duplicate\s+key\s+update)\s+(.*)$`)
)

// unquote is a table's name without its schema and quotes, lower case.
func unquote(t string) string {
	t = strings.ToLower(strings.Trim(t, "\"`"))
	if i := strings.LastIndex(t, "."); i >= 0 {
		t = t[i+1:]
	}
	return strings.Trim(t, "\"`")
}

// parse reads a trace: each statement's kind, tables and answer, and the
// transaction that committed it (per worker, in the order of the trace).
// Outside BEGIN … COMMIT a statement commits on its own, except where
// the trace shows otherwise: MySQL's SET autocommit = 0 (in the trace,
// or before it, as the proxy saw the server's status: Implicit) opens a
// transaction at each statement until a COMMIT; PostgreSQL's extended
// protocol commits the statements one Sync ended together, at that Sync,
// and those no Sync followed not at all.
func parse(trace []consumer.Statement) []stmt {
	p := &parser{
		out:      make([]stmt, len(trace)),
		open:     map[int]int{},
		txs:      map[int][]int{},
		implicit: map[int]bool{},
		groups:   map[syncGroup]int{},
		synced:   map[int]bool{},
	}
	for i, st := range trace {
		p.statement(i, st)
	}
	p.commitSyncs()
	return p.out
}

// A parser is parse's state along the trace.
type parser struct {
	out      []stmt
	open     map[int]int   // worker → its open transaction's number (0: none)
	txs      map[int][]int // transaction → its statements (indexes)
	implicit map[int]bool  // worker → autocommit off
	groups   map[syncGroup]int
	synced   map[int]bool // those transactions a Sync ended
	next     int          // the last transaction's number
	again    bool         // the redelivery's statements have begun
}

// A syncGroup is the statements of a worker one Sync ends: an implicit
// transaction of PostgreSQL's extended protocol.
type syncGroup struct {
	worker, sync int
	again        bool
}

// statement reads the trace's ith statement.
func (p *parser) statement(i int, st consumer.Statement) {
	if st.Redelivery && !p.again {
		// The kill ended the killed attempt's connections: what they had
		// open rolled back, and the redelivery's come afresh.
		p.again = true
		clear(p.open)
		clear(p.implicit)
	}
	s := stmt{n: i + 1, worker: st.Worker, rows: -1, text: st.Text, again: p.again, params: st.Params}
	s.ran = !(st.Held && st.Before) && st.Answer != "" && !strings.HasPrefix(st.Answer, "ERROR")
	s.killed = st.Held && !st.Released
	s.held = st.Held && st.Released
	if st.External == "" {
		classify(&s, strings.ToLower(strings.Join(strings.Fields(st.Text), " ")), st.Answer)
	}
	switch s.kind {
	case autocommitOff, autocommitOn:
		p.implicit[s.worker] = s.kind == autocommitOff
	case begin:
		if s.ran {
			p.next++
			p.open[s.worker] = p.next
		}
	case commit, rollback:
		if tx := p.open[s.worker]; tx != 0 && s.ran {
			if s.kind == commit {
				for _, j := range p.txs[tx] {
					p.out[j].committed = s.n
				}
			}
			delete(p.open, s.worker)
		}
	case read, write:
		p.readOrWrite(i, &s, st)
	}
	p.out[i] = s
}

// readOrWrite places a read or a write in its transaction: the worker's
// open one (autocommit off opens one), its Sync's, or none, where a
// write that ran commits on its own.
func (p *parser) readOrWrite(i int, s *stmt, st consumer.Statement) {
	if p.open[s.worker] == 0 && (p.implicit[s.worker] || st.Implicit) && s.ran {
		p.next++
		p.open[s.worker] = p.next
	}
	s.tx = p.open[s.worker]
	switch {
	case s.tx == 0 && st.Extended:
		g := syncGroup{s.worker, st.Sync, p.again}
		if p.groups[g] == 0 {
			p.next++
			p.groups[g] = p.next
		}
		s.tx = -p.groups[g]
		p.synced[s.tx] = st.Sync != 0
		p.txs[s.tx] = append(p.txs[s.tx], i)
	case s.tx == 0 && s.ran && s.kind == write:
		s.committed = s.n
	case s.tx != 0:
		p.txs[s.tx] = append(p.txs[s.tx], i)
	}
}

// commitSyncs commits each Sync's transaction at its last statement,
// when every statement of it ran.
func (p *parser) commitSyncs() {
	for tx, members := range p.txs {
		if tx >= 0 || !p.synced[tx] {
			continue
		}
		last, all := members[len(members)-1], true
		for _, j := range members {
			all = all && p.out[j].ran
		}
		for _, j := range members {
			if all {
				p.out[j].committed = p.out[last].n
			}
		}
	}
}

func classify(s *stmt, text, answer string) {
	first, _, _ := strings.Cut(text, " ")
	first = strings.TrimRight(first, ";")
	switch first {
	case "begin", "start":
		s.kind = begin
		return
	case "commit", "end":
		s.kind = commit
		return
	case "rollback", "abort":
		s.kind = rollback
		return
	}
	if m := autocommitRE.FindStringSubmatch(text); m != nil {
		s.kind = autocommitOn
		if m[1] == "0" || m[1] == "off" || m[1] == "false" {
			s.kind = autocommitOff
		}
		return
	}
	if m := writeRE.FindStringSubmatch(text); m != nil {
		s.kind = write
		for i := 1; i < len(m); i += 2 {
			if m[i] != "" {
				s.verb = m[i]
				if s.verb == "replace" {
					s.verb = "insert"
				}
				s.tables = []string{unquote(m[i+1])}
			}
		}
		s.guard = strings.Contains(text, "do nothing") || strings.HasPrefix(text, "insert ignore") || strings.HasPrefix(text, "insert or ignore")
		if set := setRE.FindStringSubmatch(text); set != nil {
			s.upsert = true
			s.additive = additive(set[1])
		}
	} else if strings.HasPrefix(text, "select") || strings.HasPrefix(text, "with") {
		s.kind = read
		for _, m := range fromRE.FindAllStringSubmatch(text, -1) {
			s.tables = append(s.tables, unquote(m[1]))
		}
	}
	if m := answerRE.FindStringSubmatch(strings.TrimSpace(answer)); m != nil && !strings.HasPrefix(answer, "ERROR") {
		s.rows, _ = strconv.Atoi(m[1])
	}
}

// additive reports whether the assignments of an upsert's SET add to a
// column's stored value: "total = total + excluded.total",
// "n = payments.n + 1", MySQL's "n = n + VALUES(n)".
func additive(set string) bool {
	if i := strings.Index(set, " where "); i >= 0 {
		set = set[:i]
	}
	if i := strings.Index(set, " returning "); i >= 0 {
		set = set[:i]
	}
	for _, a := range splitTop(set) {
		col, expr, ok := strings.Cut(a, "=")
		if !ok {
			continue
		}
		col = unquote(strings.TrimSpace(col))
		if !strings.ContainsAny(expr, "+-") {
			continue
		}
		// The stored value: the column alone or qualified by its table,
		// not excluded.col or VALUES(col), which are the new row's.
		ref := regexp.MustCompile(`(?:^|[^\w.(])(?:[\w"` + "`" + `]+\.)?["` + "`" + `]?` + regexp.QuoteMeta(col) + `["` + "`" + `]?\b`)
		for _, m := range ref.FindAllString(expr, -1) {
			if !strings.Contains(m, "excluded.") && !strings.Contains(m, "new.") {
				return true
			}
		}
	}
	return false
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// on reports whether s touches table.
func (s stmt) on(table string) bool {
	for _, t := range s.tables {
		if t == table {
			return true
		}
	}
	return false
}

// wrote reports whether s is a write to table that wrote a row.
func (s stmt) wrote(table string) bool {
	return s.kind == write && s.ran && s.rows > 0 && s.on(table)
}
