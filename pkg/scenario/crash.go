package scenario

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Crash kinds.
const (
	CrashAfter  = "after"  // kill that long after the delivery was sent
	CrashRandom = "random" // kill after a random delay within the timeout
	CrashSweep  = "sweep"  // kill at 0, 1, 2, 4 … ms until the delivery completes first
	// CrashStatement kills at one statement boundary the effects proxy
	// holds: before the statement Words begin reaches the database, or
	// after its answer (AfterStatement), before the consumer sees it.
	CrashStatement = "statement"
	// CrashStatements kills at every statement boundary of the delivery,
	// one fresh trial each.
	CrashStatements = "statements"
	// CrashExternal kills the consumer at a call to an external's
	// stand-in: {before|after: "POST /v1/charges"}.
	CrashExternal = "external"
)

// Crash kills the started consumer during a delivery.
type Crash struct {
	Pos   Pos
	Kind  string
	After time.Duration
	// A statement crash: the statement's leading words, and whether the
	// kill comes after its answer rather than before it runs. A crash at
	// an external call (CrashExternal) is after when the call's effect
	// is performed and its answer withheld.
	Words          string
	AfterStatement bool
	// Method and Path name the external call of a CrashExternal.
	Method, Path string
}

// Statement reports whether the crash lands at statement boundaries,
// which the effects proxy holds.
func (c *Crash) Statement() bool {
	return c != nil && (c.Kind == CrashStatement || c.Kind == CrashStatements)
}

// crash reads `crash: {after: D}`, `crash: random`, `crash: sweep`,
// `crash: statements`, or `crash: {before: WORDS}` / `{after: WORDS}` (a
// statement's leading words; an after that reads as a duration is one,
// a before that does is refused).
func (l *loader) crash(n *yaml.Node) *Crash {
	c := &Crash{Pos: l.pos(n)}
	if n.Kind == yaml.MappingNode {
		l.crashBeforeAfter(n, c)
		return c
	}
	s, ok := l.str(n, "crash")
	if !ok {
		return nil
	}
	switch s {
	case CrashRandom, CrashSweep, CrashStatements:
		c.Kind = s
	default:
		l.errorf(n, "crash must be {after: DURATION}, random, sweep, statements, or {before: STATEMENT} / {after: STATEMENT}, not %q", s)
		return nil
	}
	return c
}

// crashBeforeAfter reads the mapping form of a crash into c: {after: D},
// or the statement or external call to kill at, {before: …} or {after: …}.
func (l *loader) crashBeforeAfter(n *yaml.Node, c *Crash) {
	seen := 0
	l.mapping(n, "crash", []field{
		{"after", func(k, v *yaml.Node) {
			seen++
			if v.Kind == yaml.ScalarNode && looksLikeDuration(v.Value) {
				c.Kind = CrashAfter
				c.After = l.delay(v, "crash after")
				return
			}
			c.Kind, c.AfterStatement, c.Words = CrashStatement, true, l.crashWords(v, "crash after")
			if m, p, ok := externalCall(c.Words); ok {
				c.Kind, c.Method, c.Path = CrashExternal, m, p
			}
		}},
		{"before", func(k, v *yaml.Node) {
			seen++
			if v.Kind == yaml.ScalarNode && looksLikeDuration(v.Value) {
				// No statement begins with a number: this is a time,
				// and a kill comes a time after a delivery, not before.
				l.errorf(v, "crash before takes a statement's leading words, such as \"INSERT INTO payments\", not a duration (%s): to kill the consumer a time after the delivery was sent, write crash: {after: %s}", strings.TrimSpace(v.Value), strings.TrimSpace(v.Value))
				return
			}
			c.Kind, c.Words = CrashStatement, l.crashWords(v, "crash before")
			if m, p, ok := externalCall(c.Words); ok {
				c.Kind, c.Method, c.Path = CrashExternal, m, p
			}
		}},
	})
	switch seen {
	case 0:
		l.errorf(n, "crash needs after: how long after the delivery was sent to kill the consumer, such as 5ms, or the statement to kill it at: {before: \"INSERT INTO payments\"}, {after: commit}")
	case 2:
		l.errorf(n, "crash takes before or after, not both")
	}
}

// crashWords reads the statement a crash names by its leading words,
// spaced as one line; what names the field in errors.
func (l *loader) crashWords(v *yaml.Node, what string) string {
	s, ok := l.str(v, what)
	if !ok {
		return ""
	}
	if strings.TrimSpace(s) == "" {
		l.errorf(v, "%s names no statement: write its leading words, such as \"INSERT INTO payments\" or commit", what)
	}
	return strings.Join(strings.Fields(s), " ")
}

// looksLikeDuration reports whether s is written as a duration (5ms, 1.5s,
// 0) rather than as a statement's words.
func looksLikeDuration(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	if _, err := time.ParseDuration(s); err == nil {
		return true
	}
	return s[0] >= '0' && s[0] <= '9' || s[0] == '-' || s[0] == '.'
}

// String writes a crash as the file does: statements, {before: WORDS}.
func (c *Crash) String() string {
	switch {
	case c.Kind == CrashExternal && c.AfterStatement:
		return fmt.Sprintf("{after: %s %s}", c.Method, c.Path)
	case c.Kind == CrashExternal:
		return fmt.Sprintf("{before: %s %s}", c.Method, c.Path)
	case c.Kind == CrashStatement && c.AfterStatement:
		return fmt.Sprintf("{after: %s}", c.Words)
	case c.Kind == CrashStatement:
		return fmt.Sprintf("{before: %s}", c.Words)
	case c.Kind == CrashAfter:
		return fmt.Sprintf("{after: %s}", c.After)
	}
	return c.Kind
}
