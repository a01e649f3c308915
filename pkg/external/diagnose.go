package external

import (
	"sync"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/diagnose"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
)

// dialect is the effects database's kind and the effect table, for the
// diagnosis of a failing check.
func (s *Session) dialect() (kind, table string) {
	if s.db != nil {
		kind = s.db.Kind()
	}
	return kind, s.fx.Table
}

// crashTrace is the statements of a delivery killed at a statement
// boundary, the kill marked where it landed and the consumer's answer
// where it came; nil when none came through the proxy.
func crashTrace(w watch, at *sqlproxy.Boundary) []consumer.Statement {
	if len(w.trace) == 0 {
		return nil
	}
	hit := at
	if !w.reached {
		hit = nil
	}
	stmts := statementsOf(w.trace, hit)
	markAnswer(stmts, w.trace, w)
	return stmts
}

// maxCrashTraces bounds the traces a replay keeps: one per event killed
// at a statement, the first ones, so that a long replay's memory stays
// flat; a breach of an event past them is grouped as not diagnosed.
const maxCrashTraces = 10000

// crashTraces are the statements of a replay's deliveries killed at a
// statement boundary, by event id (the last kill of each), for the
// diagnosis of its breaches.
type crashTraces struct {
	mu sync.Mutex
	by map[string][]consumer.Statement
}

func (t *crashTraces) keep(event string, stmts []consumer.Statement) {
	if len(stmts) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string][]consumer.Statement{}
	}
	if _, ok := t.by[event]; ok || len(t.by) < maxCrashTraces {
		t.by[event] = stmts
	}
}

// pattern is the diagnosis of breach v from the trace of its event's
// kill, or "" when none was kept.
func (t *crashTraces) pattern(dialect, table string, v invariant.Violation) string {
	t.mu.Lock()
	stmts := t.by[v.EventID]
	t.mu.Unlock()
	if len(stmts) == 0 {
		return ""
	}
	d := diagnose.Diagnose(diagnose.Facts{Dialect: dialect, EffectTable: table, Violations: []invariant.Violation{v}, Trace: stmts})
	return string(d.Pattern)
}
