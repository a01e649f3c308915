package diagnose

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ignoredAgain is markerIgnored across a kill: the killed attempt wrote
// the effect and committed it (the marker with it), and after the
// restart the redelivery's insert of the marker, in the effect's
// transaction, wrote no row — the event's marker was there — and the
// redelivery wrote the effect anyway in that transaction, which
// committed. As markerIgnored, the redelivery read nothing of the
// marker's table before that insert.
func (d *diagnosis) ignoredAgain() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	first := d.killedAttemptsEffect()
	if first == nil {
		return nil
	}
	for i, g := range d.stmts {
		if !g.again || !d.refused(g) || d.readAgainBefore(g) {
			continue
		}
		marker := g.tables[0]
		for _, e := range d.stmts[i+1:] {
			if e.worker != g.worker || e.tx != g.tx || !e.wrote(d.effect) || e.committed == 0 {
				continue
			}
			ev := []int{first.n, first.committed, g.n, e.n, e.committed}
			with := ""
			if m := d.markerCommittedWith(first.committed, marker); m != nil {
				with = fmt.Sprintf(", with its row in %s (statement %d)", marker, m.n)
				ev = append(ev, m.n)
			}
			why := fmt.Sprintf("the killed attempt wrote %s at statement %d, committed at statement %d%s; after the restart, the redelivery's insert into %s at statement %d wrote no row (the event's marker was there), and it wrote %s anyway at statement %d, committed at statement %d — the marker's insert guards nothing when its answer is not read",
				d.effect, first.n, first.committed, with, marker, g.n, d.effect, e.n, e.committed)
			return &Diagnosis{Pattern: MarkerIgnored, Evidence: ev, Why: why, Fix: d.ignoredFix(marker)}
		}
	}
	return nil
}

// killedAttemptsEffect is the first write of the effect, committed,
// before the restart: the killed attempt's.
func (d *diagnosis) killedAttemptsEffect() *stmt {
	for i, e := range d.stmts {
		if !e.again && e.wrote(d.effect) && e.committed != 0 {
			return &d.stmts[i]
		}
	}
	return nil
}

// markerCommittedWith is the killed attempt's insert of a row into the
// marker's table, committed by the statement committed, or nil.
func (d *diagnosis) markerCommittedWith(committed int, marker string) *stmt {
	for i, m := range d.stmts {
		if !m.again && m.kind == write && m.verb == "insert" && m.ran && m.rows > 0 && m.committed == committed && m.on(marker) {
			return &d.stmts[i]
		}
	}
	return nil
}

// readAgainBefore reports whether the redelivery read g's table before
// g, on g's worker.
func (d *diagnosis) readAgainBefore(g stmt) bool {
	for _, r := range d.stmts[:g.n-1] {
		if r.again && r.worker == g.worker && r.kind == read && r.on(g.tables[0]) {
			return true
		}
	}
	return false
}

// keyInTable: a provider kept as a table of the consumer's database (its
// effect table) got two rows for one key, each insert carrying the
// idempotency key the provider dedupes by in a column of its own — none
// in any of them (NULL or empty: external call without a key), or a
// different one in each (unstable key). The key is read from the
// insert's VALUES: a bound value where the proxy saw it, or a literal;
// where an insert's key cannot be read, nothing is said.
func (d *diagnosis) keyInTable() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	var at []int
	var keys []*string
	column := ""
	for _, s := range d.stmts {
		if s.verb != "insert" || !s.wrote(d.effect) {
			continue
		}
		col, key, ok := idempotencyKey(s)
		if !ok || column != "" && col != column {
			return nil
		}
		column = col
		at = append(at, s.n)
		keys = append(keys, key)
	}
	if len(at) < 2 {
		return nil
	}
	none, seen := 0, map[string]bool{}
	for _, k := range keys {
		switch {
		case k == nil || *k == "":
			none++
		default:
			seen[*k] = true
		}
	}
	where := d.attempts(at)
	switch {
	case none == len(keys):
		return &Diagnosis{
			Pattern: ExternalWithoutKey, Evidence: at,
			Why: fmt.Sprintf("%s inserted into %s with no %s (NULL or empty)%s, so %s could not tell a retry from a new request and made %d rows for one key",
				stmtWords(at), d.effect, column, where, d.effect, len(at)),
			Fix: fmt.Sprintf("send an %s with every call to %s, derived from the event and the same on every attempt (e.g. payment-{orderId})", column, d.effect),
		}
	case none == 0 && len(seen) == len(keys):
		return &Diagnosis{
			Pattern: UnstableKey, Evidence: at,
			Why: fmt.Sprintf("%s inserted into %s under %d different values of %s%s, so %s took each retry for a new request",
				stmtWords(at), d.effect, len(keys), column, where, d.effect),
			Fix: "derive the idempotency key from the event, the same on every attempt (e.g. payment-{orderId}, or the event id), never from a random UUID or the time",
		}
	}
	return nil
}

// attempts says, when the inserts at are split between the killed
// attempt and the redelivery, which came where: ", one before the kill,
// one in the redelivery".
func (d *diagnosis) attempts(at []int) string {
	before, again := 0, 0
	for _, n := range at {
		if d.stmts[n-1].again {
			again++
		} else {
			before++
		}
	}
	if before == 0 || again == 0 {
		return ""
	}
	n := func(k int) string {
		if k == 1 {
			return "one"
		}
		return strconv.Itoa(k)
	}
	return fmt.Sprintf(", %s before the kill and %s in the redelivery", n(before), n(again))
}

var (
	insertColumnsRE = regexp.MustCompile(`(?is)^\s*(?:insert|replace)\s+(?:ignore\s+)?(?:into\s+)?[\w."` + "`" + `]+\s*\(([^)]*)\)\s*(values\s*\(|select\s)`)
	dollarRE        = regexp.MustCompile(`^\$(\d+)$`)
	castRE          = regexp.MustCompile(`(?s)::\s*[\w ]+(?:\(\d+\))?$`)
)

// idempotencyKey reads, from an insert of one row, the column that holds
// an idempotency key (its name says so: idempotency_key, idem_key) and
// the value the insert gave it: nil for NULL. ok is false when the
// insert has no such column, more than one, or its value cannot be read
// (a placeholder whose bound value was not seen or not decoded, an
// expression).
func idempotencyKey(s stmt) (column string, key *string, ok bool) {
	cols, values, ok := insertedValues(s.text)
	if !ok {
		return "", nil, false
	}
	at, column := keyColumn(cols)
	if at < 0 {
		return "", nil, false
	}
	// The ? placeholders before this value give its place among the
	// bound values.
	question := 0
	for _, v := range values[:at] {
		question += placeholders(v)
	}
	v := strings.TrimSpace(castRE.ReplaceAllString(strings.TrimSpace(values[at]), ""))
	switch {
	case strings.EqualFold(v, "null"):
		return column, nil, true
	case v == "?":
		key, ok = s.boundValue(question)
		return column, key, ok
	case dollarRE.MatchString(v):
		n, _ := strconv.Atoi(v[1:])
		key, ok = s.boundValue(n - 1)
		return column, key, ok
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' && !strings.Contains(v[1:len(v)-1], `\`):
		t := strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		if strings.Contains(strings.ReplaceAll(v[1:len(v)-1], "''", ""), "'") {
			return "", nil, false
		}
		return column, &t, true
	}
	return "", nil, false
}

// insertedValues reads the columns an insert of one row names and the
// text of the value it gives each, from a VALUES tuple or a SELECT list.
// ok is false when it cannot read them, or their counts differ.
func insertedValues(text string) (cols, values []string, ok bool) {
	m := insertColumnsRE.FindStringSubmatchIndex(text)
	if m == nil {
		return nil, nil, false
	}
	cols = splitTop(text[m[2]:m[3]])
	if strings.EqualFold(text[m[4]:m[4]+1], "s") {
		values, ok = selectList(text[m[1]:])
	} else {
		var rest string
		values, rest, ok = tuple(text[m[1]:])
		ok = ok && !strings.HasPrefix(strings.TrimSpace(rest), ",")
	}
	if !ok || len(values) != len(cols) {
		return nil, nil, false
	}
	return cols, values, true
}

// keyColumn finds the one column whose name says it holds an
// idempotency key: its index and name, or -1 when none or several do.
func keyColumn(cols []string) (at int, column string) {
	at = -1
	for i, c := range cols {
		name := unquote(strings.TrimSpace(c))
		if strings.Contains(name, "idempoten") || name == "idem_key" || name == "idemkey" {
			if at >= 0 {
				return -1, ""
			}
			at, column = i, name
		}
	}
	return at, column
}

// boundValue is the text of the statement's i-th bound value (0-based):
// nil for NULL. ok is false when it was not seen or not decoded.
func (s stmt) boundValue(i int) (*string, bool) {
	if i < 0 || i >= len(s.params) {
		return nil, false
	}
	p := s.params[i]
	switch {
	case p.Null:
		return nil, true
	case p.Undecoded:
		return nil, false
	}
	t := p.Text
	return &t, true
}

// tuple reads the values of a VALUES tuple whose "(" came before s, to
// its ")": each value's text, and what follows the ")".
func tuple(s string) (values []string, rest string, ok bool) {
	values, end, closed := list(s, false)
	if !closed {
		return nil, "", false
	}
	return values, s[end+1:], true
}

// selectList reads the values of an INSERT … SELECT's select list, s
// the text after its SELECT: each value's text, to the first FROM,
// WHERE or other clause outside parentheses and quotes, a ";", or the
// end.
func selectList(s string) (values []string, ok bool) {
	values, _, closed := list(s, true)
	return values, values != nil && !closed
}

// list splits s at its commas outside parentheses and quotes, up to a
// ")" that closes none of them (closed, at end) or, with clauses, a ";",
// a clause keyword after a space, or the end of s; nil when s ends
// inside a quote or parentheses.
func list(s string, clauses bool) (values []string, end int, closed bool) {
	depth, from := 0, 0
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case c == ')':
			return append(values, s[from:i]), i, true
		case depth > 0:
		case c == ',':
			values = append(values, s[from:i])
			from = i + 1
		case !clauses:
		case c == ';', (c == ' ' || c == '\t' || c == '\n' || c == '\r') && clauseAt(s[i+1:]):
			return append(values, s[from:i]), i, false
		}
	}
	if !clauses || quote != 0 || depth != 0 {
		return nil, len(s), false
	}
	return append(values, s[from:]), len(s), false
}

// clauseAt reports whether s starts with a keyword that ends a select
// list.
func clauseAt(s string) bool {
	for _, k := range []string{"from", "where", "union", "returning", "on", "limit", "order", "group", "having", "window"} {
		if len(s) >= len(k) && strings.EqualFold(s[:len(k)], k) && (len(s) == len(k) || !isWordByte(s[len(k)])) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// placeholders counts the ? placeholders of a value's text, outside
// quotes.
func placeholders(v string) int {
	n := 0
	quote := byte(0)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '?':
			n++
		}
	}
	return n
}
