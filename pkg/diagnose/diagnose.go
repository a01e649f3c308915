// Package diagnose names why a failing check failed: from the statements
// each worker ran (where each was held or killed, where the consumer
// answered), the calls to its externals and the invariant that broke, it
// recognises one of a few known ways of getting idempotency wrong and
// says the fix in the dialect of the consumer's database. It names a
// pattern only when the trace holds every piece of its evidence; it never
// reads the consumer's name or how it was started.
//
// Of this module it imports only pkg/consumer and pkg/invariant, and it
// links no database driver or broker client.
package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// Pattern is a known way of getting idempotency wrong.
type Pattern string

// The patterns, and NotRecognised where no pattern's evidence is complete.
const (
	CheckThenAct       Pattern = "check-then-act"
	EffectMarkerApart  Pattern = "effect-and-marker-apart"
	MarkerMissing      Pattern = "marker-missing"
	MarkerIgnored      Pattern = "marker-ignored"
	AckBeforeCommit    Pattern = "ack-before-commit"
	AdditiveUpsert     Pattern = "additive-upsert"
	ExternalWithoutKey Pattern = "external-call-without-key"
	UnstableKey        Pattern = "unstable-key"
	MarkerNotScoped    Pattern = "marker-not-scoped"
	NotRecognised      Pattern = "not-recognised"
)

// Words says the pattern as the reports print it after "why:".
func (p Pattern) Words() string {
	switch p {
	case EffectMarkerApart:
		return "effect and marker apart"
	case MarkerMissing:
		return "marker missing"
	case MarkerIgnored:
		return "marker ignored"
	case AckBeforeCommit:
		return "ack before commit"
	case AdditiveUpsert:
		return "additive upsert"
	case ExternalWithoutKey:
		return "external call without a key"
	case UnstableKey:
		return "unstable key"
	case MarkerNotScoped:
		return "marker not scoped to the consumer"
	case NotRecognised:
		return "not recognised"
	}
	return string(p)
}

// Diagnosis is why a check failed and how to fix it.
type Diagnosis struct {
	Pattern Pattern
	// Evidence are the numbers (1-based) of the trace's statements the
	// diagnosis rests on, in order; Calls the external calls (their
	// number at the external) it rests on.
	Evidence []int
	Calls    []int
	External string // the external Calls are at
	// Why says the evidence in words, with the statement numbers; Fix
	// the change, in the consumer database's dialect. Both are empty
	// when the pattern is NotRecognised.
	Why string
	Fix string
}

// Facts are what a failing check recorded.
type Facts struct {
	// Dialect is the consumer's database: "postgres", "mysql",
	// "sqlite", or "" when not known.
	Dialect string
	// EffectTable is the table the effects are read from ("" when a
	// query reads them: then no statement can be told to write one).
	EffectTable string
	Violations  []invariant.Violation
	Trace       []consumer.Statement
	Calls       []invariant.Call
}

// Diagnose says why the check whose facts these are failed. It returns
// nil when the check recorded nothing to read — no statement, no call
// and no breach of an external's invariant (the built-in handler's
// checks, a consumer run without the effects proxy): there is no
// evidence to weigh, and saying "not recognised" there would say
// nothing.
func Diagnose(f Facts) *Diagnosis {
	if len(f.Trace) == 0 && len(f.Calls) == 0 && !externalBreach(f.Violations) {
		return nil
	}
	// The patterns of one attempt read the killed attempt's statements
	// alone, as they read a trace that holds no redelivery; those that
	// need the redelivery's (what it found, what it wrote again) read
	// the whole trace: a provider's key, whose evidence is the two
	// attempts' values and names the cause where apart would name only
	// the window, beside the externals'; the marker ignored across the
	// kill last, where the others found nothing. No marker at all is
	// read across both attempts: a redelivery that writes one shows the
	// killed attempt stopped before its marker, not that there is none.
	killed := f
	killed.Trace = killedAttempt(f.Trace)
	effect := strings.ToLower(unquote(f.EffectTable))
	d := &diagnosis{Facts: killed, effect: effect, stmts: parse(killed.Trace)}
	whole := &diagnosis{Facts: f, effect: effect, stmts: parse(f.Trace)}
	for _, try := range []func() *Diagnosis{d.unstableKey, d.withoutKey, whole.keyInTable, d.additiveUpsert, d.ackBeforeCommit, d.notScoped, d.apart, d.checkThenAct, d.markerIgnored, whole.markerMissing, whole.ignoredAgain} {
		if r := try(); r != nil {
			sort.Ints(r.Evidence)
			r.Evidence = uniq(r.Evidence)
			return r
		}
	}
	return &Diagnosis{Pattern: NotRecognised}
}

// killedAttempt is a trace up to the redelivery's statements.
func killedAttempt(trace []consumer.Statement) []consumer.Statement {
	for i, st := range trace {
		if st.Redelivery {
			return trace[:i]
		}
	}
	return trace
}

func externalBreach(vs []invariant.Violation) bool {
	for _, v := range vs {
		if v.External != "" {
			return true
		}
	}
	return false
}

type diagnosis struct {
	Facts
	effect string
	stmts  []stmt
}

// broke returns the violations of the invariants named.
func (d *diagnosis) broke(names ...*invariant.Invariant) []invariant.Violation {
	var out []invariant.Violation
	for _, v := range d.Violations {
		for _, n := range names {
			if v.Invariant == n.Name {
				out = append(out, v)
			}
		}
	}
	return out
}

// calls returns the facts' calls at external numbered seqs.
func (d *diagnosis) calls(external string, seqs []int) []invariant.Call {
	var out []invariant.Call
	for _, c := range d.Calls {
		if c.External == external && contains(seqs, c.Seq) {
			out = append(out, c)
		}
	}
	return out
}

// callStatements are the numbers of the trace's calls to external.
func (d *diagnosis) callStatements(external string) []int {
	var out []int
	for i, st := range d.Trace {
		if st.External == external {
			out = append(out, i+1)
		}
	}
	return out
}

// unstableKey: the external performed the effect of one key more than
// once (external-duplicate), and it was asked under more than one
// idempotency key (unstable-idempotency-key).
func (d *diagnosis) unstableKey() *Diagnosis {
	for _, v := range d.broke(invariant.UnstableIdempotencyKey) {
		if len(v.Calls) < 2 || d.duplicateAt(v.External) == nil {
			continue
		}
		keys := map[string]bool{}
		for _, c := range d.calls(v.External, v.Calls) {
			keys[c.IdemKey] = true
		}
		return &Diagnosis{
			Pattern: UnstableKey, Evidence: d.callStatements(v.External), Calls: v.Calls, External: v.External,
			Why: fmt.Sprintf("%s to %s carried %s, one per attempt, so %s took each retry for a new request",
				callWords(v.Calls), v.External, count(max(len(keys), 2), "idempotency key", "different idempotency keys"), v.External),
			Fix: "derive the idempotency key from the event, the same on every attempt (e.g. payment-{orderId}, or the event id), never from a random UUID or the time",
		}
	}
	// An external that dedupes by the message id it was given (a
	// subscriber reading Nats-Msg-Id, a CloudEvents id) and got a
	// different one on each attempt at one event: every call carried an
	// id, no two the same, and those whose event is known are all of one
	// event, at least two of them.
	for _, v := range d.broke(invariant.ExternalDuplicate) {
		cs := d.calls(v.External, v.Calls)
		keys, event, ok := map[string]bool{}, "", true
		var same []int
		for _, c := range cs {
			ok = ok && c.IdemKey != "" && !keys[c.IdemKey]
			keys[c.IdemKey] = true
			switch {
			case c.Delivery == "":
			case event == "" || c.Delivery == event:
				event = c.Delivery
				same = append(same, c.Seq)
			default:
				ok = false
			}
		}
		if !ok || len(same) < 2 {
			continue
		}
		return &Diagnosis{
			Pattern: UnstableKey, Evidence: d.callStatements(v.External), Calls: same, External: v.External,
			Why: fmt.Sprintf("%s to %s, made for %s, carried %d different ids, one per attempt, so %s could not tell a repeat from a new message",
				callWords(same), v.External, event, len(same), v.External),
			Fix: "derive the message's id from the event, the same on every attempt (e.g. paid-{orderId}), never a fresh UUID; on NATS send it as Nats-Msg-Id too",
		}
	}
	return nil
}

// withoutKey: the external performed the effect of one key more than
// once, and the calls carried no idempotency key — the external dedupes
// by one and none came (unkeyed-external-call), or it dedupes by none.
func (d *diagnosis) withoutKey() *Diagnosis {
	for _, v := range d.broke(invariant.UnkeyedExternalCall) {
		header := "idempotency key"
		if cs := d.calls(v.External, v.Calls); len(cs) > 0 && cs[0].Header != "" {
			header = cs[0].Header + " header"
		}
		dup := d.duplicateAt(v.External)
		if dup == nil {
			continue
		}
		return &Diagnosis{
			Pattern: ExternalWithoutKey, Evidence: d.callStatements(v.External), Calls: v.Calls, External: v.External,
			Why: fmt.Sprintf("%s to %s carried no %s, so %s could not tell a retry from a new request and performed %d effects for one key",
				callWords(v.Calls), v.External, header, v.External, len(dup.Calls)),
			Fix: fmt.Sprintf("send an %s with every call to %s, derived from the event and the same on every attempt (e.g. payment-{orderId})", header, v.External),
		}
	}
	for _, v := range d.broke(invariant.ExternalDuplicate) {
		cs := d.calls(v.External, v.Calls)
		if len(cs) < 2 {
			continue
		}
		unkeyed := true
		for _, c := range cs {
			if c.Keyed || c.IdemKey != "" {
				unkeyed = false
			}
		}
		if !unkeyed {
			continue
		}
		return &Diagnosis{
			Pattern: ExternalWithoutKey, Evidence: d.callStatements(v.External), Calls: v.Calls, External: v.External,
			Why: fmt.Sprintf("%s to %s repeated one effect, and %s dedupes by no key: every attempt that reaches it performs again",
				callWords(v.Calls), v.External, v.External),
			Fix: fmt.Sprintf("write the call to %s as an outbox row in the effect's transaction and make it from the outbox after the commit, marking the row done; or give each call an id the receiving side dedupes by", v.External),
		}
	}
	return nil
}

func (d *diagnosis) duplicateAt(external string) *invariant.Violation {
	for _, v := range d.broke(invariant.ExternalDuplicate) {
		if v.External == external {
			return &v
		}
	}
	return nil
}

// additiveUpsert: a duplicate changed a stored row, and the trace shows
// an upsert of the effect's table adding to a column: the duplicate's
// upsert ran again and added again.
func (d *diagnosis) additiveUpsert() *Diagnosis {
	if len(d.broke(invariant.ChangedByDuplicate)) == 0 || d.effect == "" {
		return nil
	}
	var at []int
	for _, s := range d.stmts {
		if s.kind == write && s.additive && s.ran && s.on(d.effect) {
			at = append(at, s.n)
		}
	}
	if len(at) == 0 {
		return nil
	}
	return &Diagnosis{
		Pattern: AdditiveUpsert, Evidence: at,
		Why: fmt.Sprintf("%s upserted %s adding to the stored value, so the duplicate added again", stmtWords(at), d.effect),
		Fix: d.upsertFix(),
	}
}

// ackBeforeCommit: an effect was lost, the consumer answered before its
// effect was committed, and the kill came after the answer, before the
// COMMIT.
func (d *diagnosis) ackBeforeCommit() *Diagnosis {
	if len(d.broke(invariant.LostEffect)) == 0 {
		return nil
	}
	answered, killed := d.answeredAndKilled()
	if answered < 0 || killed < answered {
		return nil
	}
	// Nothing of the effect committed before the kill.
	open, ok := d.openAtKill(killed)
	if !ok {
		return nil
	}
	said := d.Trace[answered].AnsweredBefore
	k := d.stmts[killed]
	where := "before it reached the database"
	if !d.Trace[killed].Before {
		where = "after it ran, before the consumer saw its answer"
	}
	answer := ackWords(said)
	why := fmt.Sprintf("%s before statement %d, with its effect not yet committed", answer, answered+1)
	if len(open) > 0 {
		why = fmt.Sprintf("%s before statement %d, while %s (%s) waited uncommitted", answer, answered+1, stmtWords(open), d.effect)
	}
	fix := "answer (or ack) only after the COMMIT has returned: a kill before it then leaves the delivery unacknowledged and it is redelivered; the marker makes a redelivery after the commit a duplicate"
	if said == offsetCommitted {
		// Kafka's ack is the offset commit. Committed before the work
		// began, the trace cannot tell a record's own offset committed
		// just before its work from a polled batch committed at once
		// (auto-commit on poll): one record's evidence is the same, and
		// both are an ack before the COMMIT.
		if !d.workedBefore(answered) {
			why = fmt.Sprintf("%s before statement %d, before the transaction that writes %s began", answer, answered+1, d.effect)
			if len(open) > 0 {
				why += fmt.Sprintf(", and %s waited uncommitted at the kill", stmtWords(open))
			}
		}
		fix = "commit the record's offset only after its transaction has committed (auto-commit off, no commit at poll or before the work): a kill before then leaves the offset behind and the group reads the record again; the marker makes the second read a duplicate"
	}
	why += fmt.Sprintf("; the kill at statement %d (%s) lost the effect it had acknowledged", k.n, where)
	return &Diagnosis{
		Pattern:  AckBeforeCommit,
		Evidence: append(append([]int{answered + 1}, open...), k.n),
		Why:      why,
		Fix:      fix,
	}
}

// answeredAndKilled finds, in the trace, the first statement the
// consumer answered before and the last one the kill came at: their
// indexes, -1 for none.
func (d *diagnosis) answeredAndKilled() (answered, killed int) {
	answered, killed = -1, -1
	for i, st := range d.Trace {
		if st.AnsweredBefore != "" && answered < 0 {
			answered = i
		}
		if d.stmts[i].killed {
			killed = i
		}
	}
	return answered, killed
}

// openAtKill lists the writes of the effect, up to the kill at index
// killed, that waited uncommitted there. ok is false when one of them
// had committed before the kill.
func (d *diagnosis) openAtKill(killed int) (open []int, ok bool) {
	for _, s := range d.stmts[:killed+1] {
		if s.kind == write && d.effect != "" && s.on(d.effect) {
			if s.committed != 0 && s.committed <= killed+1 && !(s.committed == killed+1 && d.Trace[killed].Before) {
				return nil, false
			}
			open = append(open, s.n)
		}
	}
	return open, true
}

// ackWords says what the consumer's answer said was done with the
// delivery: the answer itself, or the ack a broker showed.
func ackWords(said string) string {
	switch said {
	case offsetCommitted:
		return "the consumer group's offset was committed past the record"
	case brokerAcked:
		return "the broker showed the message acked"
	case ackedAtTheLatest:
		return "the broker showed, once the instance was killed, the message acked"
	}
	return "the consumer answered " + said
}

// notScoped: an effect was lost with no kill in the trace, and the
// effect was never written: a transaction wrote a marker together with
// another consumer's effect (a table other than this one's) and
// committed, then this consumer looked the marker up and found that row
// (or its guarded insert of it wrote none), and went no further. The
// marker is keyed by the event alone and shared: one consumer's row
// stopped the other's work.
func (d *diagnosis) notScoped() *Diagnosis {
	if len(d.broke(invariant.LostEffect)) == 0 || d.effect == "" {
		return nil
	}
	for _, s := range d.stmts {
		if s.killed || s.kind == write && s.on(d.effect) {
			return nil
		}
	}
	// The marker written with the other consumer's effect: a guarded
	// insert (ON CONFLICT DO NOTHING, INSERT IGNORE) first, as markers
	// are, then any insert.
	for _, guarded := range []bool{true, false} {
		for _, m := range d.stmts {
			if m.kind != write || m.verb != "insert" || m.guard != guarded || !m.ran || m.rows < 1 || m.committed == 0 || m.tx == 0 {
				continue
			}
			if r := d.foundAfter(m); r != nil {
				return r
			}
		}
	}
	return nil
}

// foundAfter is notScoped for the marker write m: another write of its
// transaction made another consumer's effect, and a lookup after its
// commit found m's row, or a guarded insert of it wrote none.
func (d *diagnosis) foundAfter(m stmt) *Diagnosis {
	marker := m.tables[0]
	var other *stmt
	for i, o := range d.stmts {
		if o.kind == write && o.ran && o.rows > 0 && o.worker == m.worker && o.tx == m.tx && o.tables[0] != marker && o.tables[0] != d.effect {
			other = &d.stmts[i]
			break
		}
	}
	if other == nil {
		return nil
	}
	for _, r := range d.stmts[m.committed:] {
		found := r.kind == read && r.ran && r.rows > 0 && r.on(marker)
		refused := r.kind == write && r.guard && r.ran && r.rows == 0 && r.on(marker)
		if !found && !refused {
			continue
		}
		how := fmt.Sprintf("statement %d looked %s up and found that row", r.n, marker)
		if refused {
			how = fmt.Sprintf("statement %d inserted into %s and wrote no row: that one was there", r.n, marker)
		}
		return &Diagnosis{
			Pattern:  MarkerNotScoped,
			Evidence: []int{m.n, other.n, m.committed, r.n},
			Why: fmt.Sprintf("statement %d wrote the event's row in %s with %s (statement %d), committed at statement %d; %s, and %s was never written — the marker is keyed by the event alone, shared by the consumer that writes %s and the one that writes %s, so the second took the first's row for its own and skipped its work",
				m.n, marker, other.tables[0], other.n, m.committed, how, d.effect, other.tables[0], d.effect),
			Fix: d.scopedFix(marker),
		}
	}
	return nil
}

// scopedFix is the change that scopes a shared marker to each consumer,
// in the dialect of the consumer's database.
func (d *diagnosis) scopedFix(marker string) string {
	switch d.Dialect {
	case "mysql":
		return fmt.Sprintf("key %s by consumer and event: add a consumer column, make (consumer, event_id) its unique key, and have each consumer INSERT IGNORE its own name with the event id (go on only if it affected 1 row) and look up its own rows only — or give each consumer a marker table of its own", marker)
	case "postgres", "sqlite":
		return fmt.Sprintf("key %s by consumer and event: add a consumer column, make (consumer, event_id) its primary key, and have each consumer INSERT … ON CONFLICT (consumer, event_id) DO NOTHING with its own name (go on only if a row was inserted) and look up its own rows only — or give each consumer a marker table of its own", marker)
	}
	return fmt.Sprintf("key %s by consumer and event id, a unique key on both, each consumer inserting and looking up its own rows only — or give each consumer a marker table of its own", marker)
}

// How a trace marks a broker's ack (consumer.Statement.AnsweredBefore):
// JetStream's durable showing the message acked, Kafka's group showing
// its offset committed, RabbitMQ's queue showing, once the killed
// instance was gone, that it had been acked at the latest by the held
// statement.
const (
	brokerAcked      = "acked"
	offsetCommitted  = "offset committed"
	ackedAtTheLatest = "acked at the latest"
)

// workedBefore reports whether the transaction that writes the effect
// had begun before the i-th statement (0-based): a statement before it
// opened a transaction, ran in one (a Sync's implicit transaction of the
// extended protocol aside), or wrote the effect table.
func (d *diagnosis) workedBefore(i int) bool {
	for _, s := range d.stmts[:i] {
		if s.kind == begin || s.tx > 0 || s.kind == write && d.effect != "" && s.on(d.effect) {
			return true
		}
	}
	return false
}

// markers are the tables the delivery keeps its marker in, as far as the
// trace shows: other than the effect's table, looked up by a worker
// before its first write, or written in the effect's transaction.
func (d *diagnosis) markers() map[string]bool {
	m := map[string]bool{}
	wroteYet := map[int]bool{}
	for _, s := range d.stmts {
		switch s.kind {
		case read:
			if !wroteYet[s.worker] {
				for _, t := range s.tables {
					if t != d.effect {
						m[t] = true
					}
				}
			}
		case write:
			wroteYet[s.worker] = true
		}
	}
	// Written in a transaction that also wrote the effect.
	for _, e := range d.stmts {
		if e.kind != write || e.tx == 0 || !e.on(d.effect) {
			continue
		}
		for _, s := range d.stmts {
			if s.kind == write && s.tx == e.tx && !s.on(d.effect) {
				m[s.tables[0]] = true
			}
		}
	}
	return m
}

// markerWrite reports whether s writes (or tries to write) a marker.
func markerWrite(s stmt, markers map[string]bool) bool {
	if s.kind != write || s.verb != "insert" && s.verb != "update" {
		return false
	}
	for _, t := range s.tables {
		if markers[t] {
			return true
		}
	}
	return false
}

// txHolds reports whether the transaction (or autocommit statement) of
// e holds a marker write.
func (d *diagnosis) txHoldsMarker(e stmt, markers map[string]bool) bool {
	for _, s := range d.stmts {
		if markerWrite(s, markers) && s.worker == e.worker && (e.tx != 0 && s.tx == e.tx || s.n == e.n) {
			return true
		}
	}
	return false
}

func (d *diagnosis) duplicated() bool {
	return d.effect != "" && len(d.broke(invariant.DuplicateEffect, invariant.DuplicateKey)) > 0
}

// apart: the effect committed in a transaction (or an autocommit
// statement) of its own, with no marker in it, and either the kill came
// after that commit and before any marker was written, or the trace shows
// the marker written later, in another transaction, while another
// worker made a second effect.
func (d *diagnosis) apart() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	markers := d.markers()
	if len(markers) == 0 {
		return nil
	}
	if found := d.apartAtKill(markers); found != nil {
		return found
	}
	return d.apartInRace(markers)
}

// apartAtKill: a kill after the effect's commit, before any marker write.
// The marker is named only when the lookup read one table besides the
// effect's, since its write never came.
func (d *diagnosis) apartAtKill(markers map[string]bool) *Diagnosis {
	names := sortedKeys(markers)
	marker := names[0]
	for _, k := range d.stmts {
		if !k.killed || len(names) != 1 {
			continue
		}
		for _, e := range d.stmts {
			if !e.wrote(d.effect) || e.committed == 0 || e.worker != k.worker || d.txHoldsMarker(e, markers) {
				continue
			}
			// The commit ran before the kill: the kill came after it, or
			// at a later statement.
			if e.committed > k.n || e.committed == k.n && d.Trace[k.n-1].Before {
				continue
			}
			written := false
			for _, s := range d.stmts[e.n:k.n] {
				if markerWrite(s, markers) && s.ran && s.worker == k.worker {
					written = true
				}
			}
			if written {
				continue
			}
			how := fmt.Sprintf("committed at statement %d with no write to %s in its transaction", e.committed, marker)
			switch {
			case e.tx <= 0 && e.committed == e.n:
				how = fmt.Sprintf("committed on its own (autocommit), with no write to %s", marker)
			case e.tx < 0:
				how = fmt.Sprintf("committed at the Sync of statement %d (autocommit), with no write to %s", e.committed, marker)
			}
			where := fmt.Sprintf("after statement %d", k.n)
			if d.Trace[k.n-1].Before {
				where = fmt.Sprintf("before statement %d", k.n)
			}
			return &Diagnosis{
				Pattern: EffectMarkerApart, Evidence: []int{e.n, e.committed, k.n},
				Why: fmt.Sprintf("%s wrote %s at statement %d, %s; the kill %s came before %s was written, so the redelivery found no row in %s and made the effect again",
					who(d.stmts, e), d.effect, e.n, how, where, marker, marker),
				Fix: d.guardFix(marker),
			}
		}
	}
	return nil
}

// apartInRace: a worker's effect committed with no marker, its marker
// written after the commit; another worker made a second effect.
func (d *diagnosis) apartInRace(markers map[string]bool) *Diagnosis {
	for _, e := range d.stmts {
		if !e.wrote(d.effect) || e.committed == 0 || d.txHoldsMarker(e, markers) {
			continue
		}
		var later *stmt
		for _, s := range d.stmts[e.committed:] {
			if markerWrite(s, markers) && s.worker == e.worker {
				later = &s
				break
			}
		}
		if later == nil {
			continue
		}
		for _, o := range d.stmts {
			if o.worker == e.worker || !o.wrote(d.effect) {
				continue
			}
			return &Diagnosis{
				Pattern: EffectMarkerApart, Evidence: []int{e.n, e.committed, later.n, o.n},
				Why: fmt.Sprintf("worker %d committed %s at statement %d and wrote %s only at statement %d, in another transaction; worker %d wrote %s again at statement %d — a marker outside the effect's transaction guards nothing",
					e.worker, d.effect, e.committed, later.tables[0], later.n, o.worker, d.effect, o.n),
				Fix: d.guardFix(later.tables[0]),
			}
		}
	}
	return nil
}

// checkThenAct: a worker read the marker or the effect and found no row,
// another worker's effect committed after that read, and the first
// wrote the effect anyway.
func (d *diagnosis) checkThenAct() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	markers := d.markers()
	for _, r := range d.stmts {
		if r.kind != read || !r.ran || r.rows != 0 {
			continue
		}
		looked := d.lookedUp(r, markers, true)
		if looked == "" {
			continue
		}
		for _, c := range d.stmts {
			if c.worker == r.worker || !c.wrote(d.effect) || c.committed <= r.n {
				continue
			}
			for _, w := range d.stmts[c.committed:] {
				if w.worker != r.worker || !w.wrote(d.effect) {
					continue
				}
				why := fmt.Sprintf("worker %d read %s (0 rows) at statement %d, worker %d committed at statement %d, worker %d inserted at statement %d",
					r.worker, looked, r.n, c.worker, c.committed, r.worker, w.n)
				ev := []int{r.n, c.committed, w.n}
				for _, g := range d.stmts[r.n:w.n] {
					if g.worker == r.worker && markerWrite(g, markers) && g.ran && g.rows == 0 {
						why += fmt.Sprintf(" (its insert into %s at statement %d wrote no row, and it went on)", g.tables[0], g.n)
						ev = append(ev, g.n)
						break
					}
				}
				why += " — no unique key stopped it"
				marker := looked
				if marker == d.effect {
					marker = "a processed marker"
				}
				return &Diagnosis{Pattern: CheckThenAct, Evidence: ev, Why: why, Fix: d.guardFix(marker)}
			}
		}
	}
	if r := d.bothActed(markers); r != nil {
		return r
	}
	return d.actedPastGuard(markers)
}

// lookedUp is the table a read r looked a delivery up in: the first of
// its tables that is a marker, else the effect's table when orEffect and
// r reads it, else "".
func (d *diagnosis) lookedUp(r stmt, markers map[string]bool, orEffect bool) string {
	for _, t := range r.tables {
		if markers[t] {
			return t
		}
	}
	if orEffect && r.on(d.effect) {
		return d.effect
	}
	return ""
}

// actedPastGuard is check-then-act where the trace's order cannot show
// the other worker's commit between the check and the act (statements are
// numbered as the proxy received them, not as the server ran them): a
// worker read the marker (0 rows), its own insert of the marker then wrote
// no row — another worker's was there — and it wrote the effect anyway.
func (d *diagnosis) actedPastGuard(markers map[string]bool) *Diagnosis {
	for _, r := range d.stmts {
		if r.kind != read || !r.ran || r.rows != 0 {
			continue
		}
		looked := d.lookedUp(r, markers, false)
		if looked == "" {
			continue
		}
		var guard *stmt
		for i := r.n; i < len(d.stmts); i++ {
			s := d.stmts[i]
			if s.worker != r.worker {
				continue
			}
			switch {
			case guard == nil && markerWrite(s, markers) && s.ran && s.rows == 0:
				guard = &d.stmts[i]
			case guard != nil && s.wrote(d.effect) && s.ran:
				why := fmt.Sprintf("worker %d read %s (0 rows) at statement %d, its insert into %s at statement %d wrote no row (another worker's was there), and it inserted %s at statement %d anyway — no unique key stopped it",
					r.worker, looked, r.n, guard.tables[0], guard.n, d.effect, s.n)
				return &Diagnosis{Pattern: CheckThenAct, Evidence: []int{r.n, guard.n, s.n}, Why: why, Fix: d.guardFix(looked)}
			}
		}
	}
	return nil
}

// bothActed is check-then-act with no commit between: two workers each
// read the marker or the effect (0 rows), each wrote the effect after
// its read, and both writes committed — each checked before the other
// acted, and nothing stopped the second write.
func (d *diagnosis) bothActed(markers map[string]bool) *Diagnosis {
	type acted struct {
		read, write stmt
		looked      string
	}
	first := map[int]*acted{} // by worker: its first read, then its first effect write after it
	for _, s := range d.stmts {
		a := first[s.worker]
		switch {
		case a == nil && s.kind == read && s.ran && s.rows == 0:
			if looked := d.lookedUp(s, markers, true); looked != "" {
				first[s.worker] = &acted{read: s, looked: looked}
			}
		case a != nil && a.write.n == 0 && s.wrote(d.effect) && s.committed != 0:
			a.write = s
		}
	}
	var both []*acted
	for _, w := range sortedWorkers(first) {
		if a := first[w]; a.write.n != 0 {
			both = append(both, a)
		}
	}
	if len(both) < 2 {
		return nil
	}
	a, b := both[0], both[1]
	// Each read came before the other's write was committed.
	if a.read.n > b.write.committed || b.read.n > a.write.committed {
		return nil
	}
	why := fmt.Sprintf("workers %d and %d read %s (0 rows) at statements %d and %d, then both inserted (statements %d and %d) and both committed (statements %d and %d) — each checked before the other's insert committed, and no unique key stopped either",
		a.read.worker, b.read.worker, a.looked, a.read.n, b.read.n, a.write.n, b.write.n, a.write.committed, b.write.committed)
	marker := a.looked
	if marker == d.effect {
		marker = "a processed marker"
	}
	return &Diagnosis{Pattern: CheckThenAct, Evidence: []int{a.read.n, b.read.n, a.write.n, b.write.n, a.write.committed, b.write.committed}, Why: why, Fix: d.guardFix(marker)}
}

func sortedWorkers[T any](m map[int]T) []int {
	ws := make([]int, 0, len(m))
	for w := range m {
		ws = append(ws, w)
	}
	sort.Ints(ws)
	return ws
}

// markerIgnored: the effect was written twice, and a worker's insert of
// the marker in the effect's transaction wrote no row — its key was
// there, so the event had been processed — and the same worker then wrote
// the effect anyway, in that transaction, which committed: the insert's
// answer was never read. The worker read nothing of the marker's table
// before that insert (a lookup that found no row is check-then-act's
// evidence, weighed before this), and the insert skips an existing key
// without changing it (ON CONFLICT DO NOTHING, INSERT IGNORE, or MySQL's
// ON DUPLICATE KEY UPDATE that changed nothing and counted 0 rows).
func (d *diagnosis) markerIgnored() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	for i, g := range d.stmts {
		if !d.refused(g) || d.readBefore(g) {
			continue
		}
		marker := g.tables[0]
		for _, e := range d.stmts[i+1:] {
			if e.worker != g.worker || e.tx != g.tx || !e.wrote(d.effect) || e.committed == 0 {
				continue
			}
			ev := []int{g.n, e.n, e.committed}
			why := fmt.Sprintf("%s's insert into %s at statement %d wrote no row (the event's marker was there)", who(d.stmts, g), marker, g.n)
			if o := d.markedBy(g); o != nil {
				why = fmt.Sprintf("worker %d wrote the event's row in %s at statement %d, committed at statement %d; worker %d's insert of it at statement %d wrote no row",
					o.worker, marker, o.n, o.committed, g.worker, g.n)
				ev = append(ev, o.n, o.committed)
			}
			why += fmt.Sprintf(", and it wrote %s anyway at statement %d, committed at statement %d, in the same transaction — the marker's insert guards nothing when its answer is not read", d.effect, e.n, e.committed)
			return &Diagnosis{Pattern: MarkerIgnored, Evidence: ev, Why: why, Fix: d.ignoredFix(marker)}
		}
	}
	return nil
}

// refused reports whether g is an insert into a table other than the
// effect's, in a transaction, that skipped its row because the key was
// there: it ran, counted 0 rows, and skips or leaves an existing row.
func (d *diagnosis) refused(g stmt) bool {
	return g.kind == write && g.verb == "insert" && g.ran && g.rows == 0 && g.tx != 0 && len(g.tables) > 0 &&
		!g.on(d.effect) && (g.guard || g.upsert && !g.additive)
}

// readBefore reports whether g's worker read g's table before g.
func (d *diagnosis) readBefore(g stmt) bool {
	for _, r := range d.stmts[:g.n-1] {
		if r.worker == g.worker && r.kind == read && r.on(g.tables[0]) {
			return true
		}
	}
	return false
}

// markedBy is another worker's committed insert that wrote the row of
// g's table g then found, when the trace holds one.
func (d *diagnosis) markedBy(g stmt) *stmt {
	for i, o := range d.stmts {
		if o.worker != g.worker && o.kind == write && o.verb == "insert" && o.ran && o.rows > 0 && o.committed != 0 && o.on(g.tables[0]) {
			return &d.stmts[i]
		}
	}
	return nil
}

// ignoredFix is the change that makes the marker's insert the guard it
// was meant to be, in the dialect of the consumer's database.
func (d *diagnosis) ignoredFix(marker string) string {
	switch d.Dialect {
	case "mysql":
		return fmt.Sprintf("read the marker insert's affected rows: INSERT IGNORE INTO %s … (unique key on the event id) and go on only if it affected 1 row (else ROLLBACK and answer as a duplicate); then write %s and COMMIT", marker, d.effect)
	case "sqlite":
		return fmt.Sprintf("read the marker insert's answer: INSERT INTO %s … ON CONFLICT DO NOTHING and go on only if changes() is 1 (else ROLLBACK and answer as a duplicate); then write %s and COMMIT", marker, d.effect)
	case "postgres":
		return fmt.Sprintf("read the marker insert's answer: INSERT INTO %s … ON CONFLICT DO NOTHING RETURNING …, and go on only if a row came back (else ROLLBACK and answer as a duplicate); then write %s and COMMIT", marker, d.effect)
	}
	return fmt.Sprintf("read the marker insert's answer: go on only if it inserted a row (else roll back and answer as a duplicate); then write %s and commit", d.effect)
}

// markerMissing: the effect was written twice and the trace shows no
// marker at all: nothing read, nothing written but the effect, and no
// write that skips or merges a row whose key exists.
func (d *diagnosis) markerMissing() *Diagnosis {
	if !d.duplicated() {
		return nil
	}
	var effects []int
	for _, s := range d.stmts {
		switch {
		case s.kind == read:
			return nil
		case s.kind == write && (!s.on(d.effect) || s.guard || s.upsert):
			return nil
		case s.wrote(d.effect):
			effects = append(effects, s.n)
		}
	}
	for _, st := range d.Trace {
		if st.External != "" {
			return nil
		}
	}
	if len(effects) == 0 {
		return nil
	}
	return &Diagnosis{
		Pattern: MarkerMissing, Evidence: effects,
		Why: fmt.Sprintf("%s wrote %s with no marker read or written in the delivery", stmtWords(effects), d.effect),
		Fix: d.guardFix("a processed marker table"),
	}
}

// guardFix is the change that makes the marker guard the effect, in the
// dialect of the consumer's database.
func (d *diagnosis) guardFix(marker string) string {
	switch d.Dialect {
	case "mysql":
		return fmt.Sprintf("give %s a unique key on the event id and, in the effect's transaction, INSERT IGNORE INTO %s first; go on only if it affected 1 row (else answer as a duplicate), then write %s and COMMIT", marker, marker, d.effect)
	case "sqlite":
		return fmt.Sprintf("in the effect's transaction (BEGIN IMMEDIATE), INSERT INTO %s … ON CONFLICT DO NOTHING first; go on only if changes() is 1 (else answer as a duplicate), then write %s and COMMIT", marker, d.effect)
	case "postgres":
		return fmt.Sprintf("make the marker insert the guard, in the effect's transaction: INSERT INTO %s … ON CONFLICT DO NOTHING RETURNING …; go on only if a row was inserted (else answer as a duplicate), then write %s and COMMIT", marker, d.effect)
	}
	return fmt.Sprintf("insert into %s under a unique key on the event id, in the effect's transaction, skipping on a conflict; go on only if a row was inserted, then write %s and commit both together", marker, d.effect)
}

func (d *diagnosis) upsertFix() string {
	switch d.Dialect {
	case "mysql":
		return fmt.Sprintf("guard the upsert with a marker: in its transaction INSERT IGNORE INTO the marker table (unique key on the event id) first and skip the upsert unless it affected 1 row; or set the value outright (ON DUPLICATE KEY UPDATE x = VALUES(x)) instead of adding to %s", d.effect)
	case "postgres", "sqlite":
		return fmt.Sprintf("guard the upsert with a marker: in its transaction INSERT INTO the marker table … ON CONFLICT DO NOTHING first and skip the upsert unless it inserted a row; or set the value outright (DO UPDATE SET x = EXCLUDED.x) instead of adding to %s", d.effect)
	}
	return fmt.Sprintf("guard the upsert with a marker inserted under a unique key in the same transaction, skipping the upsert on a conflict; or set the value outright instead of adding to %s", d.effect)
}

// who names the worker of s when the trace has several.
func who(stmts []stmt, s stmt) string {
	for _, o := range stmts {
		if o.worker != s.worker {
			return fmt.Sprintf("worker %d", s.worker)
		}
	}
	return "the delivery"
}

func stmtWords(ns []int) string {
	if len(ns) == 1 {
		return fmt.Sprintf("statement %d", ns[0])
	}
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return "statements " + strings.Join(s, ", ")
}

func callWords(ns []int) string {
	if len(ns) == 1 {
		return fmt.Sprintf("call %d", ns[0])
	}
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return "calls " + strings.Join(s, ", ")
}

func count(n int, one, many string) string {
	if n == 1 {
		return "one " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func contains(ns []int, n int) bool {
	for _, m := range ns {
		if m == n {
			return true
		}
	}
	return false
}

func uniq(ns []int) []int {
	var out []int
	for i, n := range ns {
		if i == 0 || n != ns[i-1] {
			out = append(out, n)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
