package scenario

import (
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/template"
	"go.yaml.in/yaml/v3"
)

// Effects is where the consumer's business effects land, and how a
// delivery names the effect it should make.
type Effects struct {
	Pos   Pos
	DB    string
	DBPos Pos
	Reset []string
	// ResetPos is where reset is written; AllowReset are the hosts
	// besides this machine and one-label service hosts that reset may
	// empty (the effects package holds reset to them).
	ResetPos   Pos
	AllowReset []string
	Table      string // table + Key (+ Event), or Query
	Key        string
	Event      string
	Query      string
	QueryPos   Pos
	KeyOf      template.Template
	// IgnoreColumns are columns a consumer may change on a duplicate or a
	// conflict (such as updated_at): rows are compared without them.
	IgnoreColumns []string
	// Proxy: redeliver relays the consumer's PostgreSQL connections
	// (through ${REDELIVER_DB_URL}) and sees every statement.
	Proxy    bool
	ProxyPos Pos
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$`)
var column = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (l *loader) effects(n *yaml.Node) {
	e := &Effects{Pos: l.pos(n)}
	l.s.Effects = e
	var dbSeen, keyOfSeen bool
	var tableNode, keyNode, eventNode, queryNode, resetNode, allowNode *yaml.Node
	l.mapping(n, "effects", []field{
		{"db", func(k, v *yaml.Node) { dbSeen = true; l.effectsDB(e, v) }},
		{"reset", func(k, v *yaml.Node) { resetNode, e.ResetPos = k, l.pos(k); e.Reset = l.resetStatements(v) }},
		{"allow_reset", func(k, v *yaml.Node) { allowNode = k; e.AllowReset = l.allowReset(v) }},
		{"table", func(k, v *yaml.Node) { tableNode = v; e.Table = l.name(v, "table", identifier) }},
		{"key", func(k, v *yaml.Node) { keyNode = v; e.Key = l.name(v, "key", column) }},
		{"event", func(k, v *yaml.Node) { eventNode = v; e.Event = l.name(v, "event", column) }},
		{"query", func(k, v *yaml.Node) { queryNode, e.QueryPos = v, l.pos(v); e.Query = l.effectsQuery(v) }},
		{"key_of", func(k, v *yaml.Node) { keyOfSeen = true; e.KeyOf = l.keyOf(v) }},
		{"ignore_columns", func(k, v *yaml.Node) { e.IgnoreColumns = l.columns(v) }},
		{"proxy", func(k, v *yaml.Node) { e.Proxy, e.ProxyPos = l.boolean(v, "proxy"), l.pos(k) }},
	})
	if n.Kind != yaml.MappingNode {
		return
	}
	if !dbSeen {
		l.errorf(n, "effects needs db: where the consumer writes (postgres://…, mysql://… or a SQLite file path)")
	}
	if !keyOfSeen {
		l.errorf(n, "effects needs key_of: the template naming the effect a delivery should make, such as \"{data.orderId}\"")
	}
	switch {
	case queryNode != nil && tableNode != nil:
		l.errorf(queryNode, "effects takes table and key, or query, not both")
	case queryNode != nil:
		for _, x := range []*yaml.Node{keyNode, eventNode} {
			if x != nil {
				l.errorf(x, "with query, the key and event are the query's columns named key and event; remove this field")
			}
		}
	case tableNode == nil:
		l.errorf(n, "effects needs table: the table of the business effect (with key: its key column), or query: a SELECT returning a key column")
	case keyNode == nil:
		l.errorf(tableNode, "effects needs key: the column of %s that identifies one business effect", e.Table)
	}
	if allowNode != nil && resetNode == nil {
		l.errorf(allowNode, "allow_reset names the hosts reset may empty, and effects has no reset; remove allow_reset")
	}
}

// effectsDB reads db: the consumer's database, whose scheme must be one
// redeliver reads (or none, for a SQLite file).
func (l *loader) effectsDB(e *Effects, v *yaml.Node) {
	e.DBPos = l.pos(v)
	if s, ok := l.xstr(v, "db"); ok {
		if s == "" {
			l.errorf(v, "db is empty; expected postgres://…, mysql://… or a SQLite file path")
		} else if i := strings.Index(s, "://"); i > 0 && !knownDB(s[:i]) {
			l.errorf(v, "db %s: unknown database %q; expected postgres://…, mysql://… or a SQLite file path", redact.URL(s), s[:i])
		} else if i > 0 && s[:i] != "sqlite" && s[:i] != "file" {
			if _, err := url.Parse(s); err != nil {
				l.errorf(v, "db is not a valid URL: %v", redact.Error(err))
			}
		}
		e.DB = s
	}
}

// resetStatements reads reset: the statements that empty the consumer's
// tables before the file runs.
func (l *loader) resetStatements(v *yaml.Node) []string {
	var out []string
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "reset must be a list of SQL statements such as [\"DELETE FROM payments\"], not %s", describe(v))
		return nil
	}
	for _, sn := range v.Content {
		if s, ok := l.xstr(resolve(sn), "reset statement"); ok {
			if strings.TrimSpace(s) == "" {
				l.errorf(sn, "reset statement is empty")
				continue
			}
			out = append(out, s)
		}
	}
	return out
}

// allowReset reads allow_reset: the database hosts besides this machine
// that reset may empty.
func (l *loader) allowReset(v *yaml.Node) []string {
	var out []string
	if v.Kind != yaml.SequenceNode {
		l.errorf(v, "allow_reset must be a list of database hosts such as [db.ci.internal], not %s", describe(v))
		return nil
	}
	for _, hn := range v.Content {
		if h, ok := l.xstr(resolve(hn), "allow_reset entry"); ok {
			if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/@ ") {
				l.errorf(hn, "allow_reset entry must be a host name or IP such as db.ci.internal, not %q", h)
				continue
			}
			out = append(out, h)
		}
	}
	return out
}

// effectsQuery reads query: one SELECT returning a key column, and
// optionally event.
func (l *loader) effectsQuery(v *yaml.Node) string {
	if s, ok := l.xstr(v, "query"); ok {
		if !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "SELECT") && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "WITH") {
			l.errorf(v, "query must be a SELECT returning a key column (and optionally event), not %q", s)
		} else if more, ok := oneStatement(s); !ok {
			l.errorf(v, "query must be one statement, and a ; is followed by more (%q): a second statement may write where the first only reads", more)
		}
		return s
	}
	return ""
}

// columns reads ignore_columns: a list of column names, each once.
func (l *loader) columns(n *yaml.Node) []string {
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, "ignore_columns must be a list of column names such as [updated_at], not %s", describe(n))
		return nil
	}
	var out []string
	for _, cn := range n.Content {
		c := l.name(resolve(cn), "an ignore_columns entry", column)
		if c == "" {
			continue
		}
		for _, o := range out {
			if strings.EqualFold(o, c) {
				l.errorf(cn, "ignore_columns names %s twice", c)
			}
		}
		out = append(out, c)
	}
	return out
}

func knownDB(scheme string) bool {
	switch scheme {
	case "postgres", "postgresql", "mysql", "sqlite", "file":
		return true
	}
	return false
}

func (l *loader) name(n *yaml.Node, what string, re *regexp.Regexp) string {
	s, ok := l.xstr(n, what)
	if !ok {
		return ""
	}
	if !re.MatchString(s) {
		l.errorf(n, "%s must be a name of letters, digits and underscores, not %q", what, s)
	}
	return s
}

// keyOfFields are the placeholders key_of may use besides paths under data
// and headers.
var keyOfFields = []string{"id", "source", "type", "subject", "schema", "time"}

func (l *loader) keyOf(n *yaml.Node) template.Template {
	if p := Placeholder(n.Value); n.Kind == yaml.ScalarNode && p != "" {
		l.errorf(n, "key_of is still the placeholder %s: replace it with your own value", p)
		return template.Template{}
	}
	t := l.tmpl(n, "key_of")
	if t.IsZero() {
		if n.Kind == yaml.ScalarNode {
			l.errorf(n, "key_of is empty; it names the effect a delivery should make, such as \"{data.orderId}\"")
		}
		return t
	}
	for _, f := range t.Fields() {
		if !KeyOfField(f) {
			l.errorf(n, "key_of uses unknown placeholder {%s}; expected a path under data (such as {data.orderId}) or headers, or one of %s", f, strings.Join(braced(keyOfFields), ", "))
		}
	}
	return t
}

// KeyOfField reports whether a key_of placeholder names a part of an event.
func KeyOfField(f string) bool {
	for _, k := range keyOfFields {
		if f == k {
			return true
		}
	}
	for _, prefix := range []string{"data", "headers"} {
		if rest, ok := strings.CutPrefix(f, prefix+"."); ok && pathSyntax.MatchString(rest) {
			return true
		}
	}
	return f == "data"
}

// keyCounts reads a check's `effects: {KEY: N}`.
func (l *loader) keyCounts(n *yaml.Node) []KeyCount {
	var out []KeyCount
	l.mappingAny(n, "effects", func(k, v *yaml.Node) {
		if c, ok := l.integer(v, "effects of "+k.Value, 0, math.MaxInt); ok {
			out = append(out, KeyCount{Key: k.Value, N: int64(c), Pos: l.pos(k)})
		}
	})
	return out
}

// oneStatement reports whether a query is one statement: nothing but
// spaces and semicolons after its first ";". A read-only transaction
// holds one statement, but a driver that runs several (pgx's simple
// protocol, MySQL's multiStatements, SQLite) would run a COMMIT and a
// DELETE after it. A ";" inside a string literal or a comment counts
// too: telling them apart as each database does is not worth the risk.
// When it is not, more is what follows the ";".
func oneStatement(q string) (more string, ok bool) {
	i := strings.IndexByte(q, ';')
	if i < 0 || strings.Trim(q[i:], "; \t\r\n") == "" {
		return "", true
	}
	return q[i+1:], false
}
