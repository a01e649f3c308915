package diagnose

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
)

// The statements of the example payments consumer, as the proxy shows them.
const (
	lookup   = "SELECT m.payload, (SELECT min(p.id) FROM payments p WHERE p.event_id = m.event_id) FROM processed_messages m WHERE m.event_id = $1"
	charge   = "INSERT INTO provider_charges (idempotency_key, order_id, amount, request) VALUES ($1, $2, $3, $4) ON CONFLICT (idempotency_key) DO NOTHING RETURNING id"
	charged  = "SELECT id, request FROM provider_charges WHERE idempotency_key = $1"
	marker   = "INSERT INTO processed_messages (event_id, payload) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
	payment  = "INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES ($1, $2, $3, $4) RETURNING id"
	plainPay = "INSERT INTO payments (order_id, event_id, amount) VALUES ($1, $2, $3)"

	// Two consumers' markers: shared, keyed by the event id alone, or
	// scoped, keyed by the consumer and the event id.
	sharedLookup = "SELECT 1 FROM processed_messages WHERE event_id = $1"
	sharedMarker = "INSERT INTO processed_messages (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING"
	scopedLookup = "SELECT 1 FROM consumer_markers WHERE consumer = $1 AND event_id = $2"
	pointsInsert = "INSERT INTO points (order_id, event_id, points) VALUES ($1, $2, $3)"

	// The example consumer's statements on MySQL.
	myLookup  = "SELECT m.payload, (SELECT min(p.id) FROM payments p WHERE p.event_id = m.event_id) FROM processed_messages m WHERE m.event_id = ?"
	myCharge  = "INSERT INTO provider_charges (idempotency_key, order_id, amount, request) VALUES (?, ?, ?, ?) ON DUPLICATE KEY UPDATE id = id"
	myMarker  = "INSERT INTO processed_messages (event_id, payload) VALUES (?, ?) ON DUPLICATE KEY UPDATE event_id = event_id"
	myPayment = "INSERT INTO payments (order_id, event_id, amount, charge_id) VALUES (?, ?, ?, ?)"
)

// w is a statement of worker n.
func w(n int, text, answer string) consumer.Statement {
	return consumer.Statement{Worker: n, Text: text, Answer: answer}
}

// killedAfter marks st as the one the kill came after; killedBefore
// before it reached the database; heldAfter a race's hold after it.
func killedAfter(st consumer.Statement) consumer.Statement {
	st.Held = true
	return st
}

// implicit marks st as sent with MySQL's autocommit off.
func implicit(st consumer.Statement) consumer.Statement {
	st.Implicit = true
	return st
}

func killedBefore(st consumer.Statement) consumer.Statement {
	st.Held, st.Before, st.Answer = true, true, ""
	return st
}

func heldAfter(st consumer.Statement) consumer.Statement {
	st.Held, st.Released = true, true
	return st
}

// ext is st sent in the extended protocol, ended by Sync number sync
// (0: none came).
func ext(st consumer.Statement, sync int) consumer.Statement {
	st.Extended, st.Sync = true, sync
	return st
}

// again marks statements as the redelivery's, after the kill.
func again(sts ...consumer.Statement) []consumer.Statement {
	out := make([]consumer.Statement, len(sts))
	for i, st := range sts {
		st.Redelivery = true
		out[i] = st
	}
	return out
}

// bound gives st the values bound to it: a string each, nil for NULL.
func bound(st consumer.Statement, values ...any) consumer.Statement {
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			st.Params = append(st.Params, consumer.Param{Null: true})
		case consumer.Param:
			st.Params = append(st.Params, v)
		default:
			st.Params = append(st.Params, consumer.Param{Text: v.(string)})
		}
	}
	return st
}

// trace is the killed attempt's statements, then the redelivery's.
func trace(killed []consumer.Statement, redelivery ...consumer.Statement) []consumer.Statement {
	return append(append([]consumer.Statement{}, killed...), again(redelivery...)...)
}

func answered(said string, st consumer.Statement) consumer.Statement {
	st.AnsweredBefore = said
	return st
}

var (
	duplicate = []invariant.Violation{{Invariant: invariant.DuplicateEffect.Name, EventID: "evt-1"}}
	lost      = []invariant.Violation{{Invariant: invariant.LostEffect.Name, EventID: "evt-1"}}
	changed   = []invariant.Violation{{Invariant: invariant.ChangedByDuplicate.Name, EventID: "evt-1"}}
)

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name     string
		facts    Facts
		want     Pattern
		evidence []int
		why      []string // in Why
		fix      []string // in Fix
	}{
		{
			name: "check-then-act: a lookup, the other's commit, the insert anyway",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"),
				w(2, lookup, "SELECT 0"), w(1, "commit", "COMMIT"), w(2, charge, "INSERT 0 0"), w(2, charged, "SELECT 1"), w(2, "begin", "BEGIN"),
				w(2, marker, "INSERT 0 0"), w(2, payment, "INSERT 0 1"), w(2, "commit", "COMMIT"),
			}},
			want: CheckThenAct, evidence: []int{6, 7, 11, 12},
			why: []string{"worker 2 read processed_messages (0 rows) at statement 6, worker 1 committed at statement 7, worker 2 inserted at statement 12", "at statement 11 wrote no row"},
			fix: []string{"INSERT INTO processed_messages … ON CONFLICT DO NOTHING", "in the effect's transaction"},
		},
		{
			name: "check-then-act on MySQL: the fix in its dialect",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0"), w(2, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0"),
				w(1, "START TRANSACTION", "OK"), w(1, "INSERT INTO payments VALUES (?)", "INSERT 0 1"), w(1, "INSERT INTO processed VALUES (?)", "INSERT 0 1"), w(1, "COMMIT", "OK"),
				w(2, "START TRANSACTION", "OK"), w(2, "INSERT INTO payments VALUES (?)", "INSERT 0 1"), w(2, "INSERT INTO processed VALUES (?)", "INSERT 0 1"), w(2, "COMMIT", "OK"),
			}},
			want: CheckThenAct, evidence: []int{2, 6, 8},
			fix: []string{"unique key", "INSERT IGNORE INTO processed", "affected 1 row"},
		},
		{
			name: "effect and marker apart: killed after the effect's COMMIT",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}},
			want: EffectMarkerApart, evidence: []int{4, 5},
			why: []string{"wrote payments at statement 4, committed at statement 5 with no write to processed_messages", "the kill after statement 5 came before processed_messages was written"},
			fix: []string{"INSERT INTO processed_messages … ON CONFLICT DO NOTHING"},
		},
		{
			name: "effect and marker apart: autocommit, killed after the effect",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), killedAfter(w(1, payment, "INSERT 0 1")),
			}},
			want: EffectMarkerApart, evidence: []int{3},
			why: []string{"committed on its own (autocommit)", "the kill after statement 3"},
		},
		{
			name: "effect and marker apart, in a race: the marker written after the effect's commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				heldAfter(w(1, lookup, "SELECT 0")), w(2, lookup, "SELECT 0"), w(2, charge, "INSERT 0 1"), w(2, "begin", "BEGIN"), w(2, payment, "INSERT 0 1"),
				w(2, "commit", "COMMIT"), w(2, marker, "INSERT 0 1"), w(1, charge, "INSERT 0 0"), w(1, charged, "SELECT 1"), w(1, "begin", "BEGIN"),
				w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"), w(1, marker, "INSERT 0 0"),
			}},
			want: EffectMarkerApart, evidence: []int{5, 6, 7, 11},
			why: []string{"worker 2 committed payments at statement 6 and wrote processed_messages only at statement 7", "worker 1 wrote payments again at statement 11"},
		},
		{
			name: "ack before commit: answered, then killed before any COMMIT",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), answered("202", killedBefore(w(1, lookup, ""))),
			}},
			want: AckBeforeCommit, evidence: []int{2},
			why: []string{"answered 202 before statement 2", "the kill at statement 2 (before it reached the database)"},
			fix: []string{"only after the COMMIT"},
		},
		{
			name: "ack before commit: answered from inside the transaction",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"),
				answered("200", killedBefore(w(1, "commit", ""))),
			}},
			want: AckBeforeCommit, evidence: []int{5, 6},
			why: []string{"answered 200 before statement 6, while statement 5 (payments) waited uncommitted"},
		},
		{
			// A consumer outside the repository (psycopg2) behind two
			// instances: both looked, both paid, no commit between.
			name: "check-then-act with no commit between the two checks and acts",
			facts: Facts{Dialect: "postgres", EffectTable: "py_payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "SELECT 1 FROM py_processed WHERE event_id = 'nokey-evt-40'", "SELECT 0"), w(2, "SELECT 1 FROM py_processed WHERE event_id = 'nokey-evt-40'", "SELECT 0"),
				w(2, "BEGIN", "BEGIN"), w(2, "INSERT INTO py_payments (order_id, event_id, amount) VALUES ('O-40', 'evt-40', 40)", "INSERT 0 1"),
				w(1, "BEGIN", "BEGIN"), w(1, "INSERT INTO py_payments (order_id, event_id, amount) VALUES ('O-40', 'evt-40', 40)", "INSERT 0 1"),
				w(1, "INSERT INTO py_processed (event_id) VALUES ('nokey-evt-40')", "INSERT 0 1"), w(2, "INSERT INTO py_processed (event_id) VALUES ('nokey-evt-40')", "INSERT 0 1"),
				w(1, "COMMIT", "COMMIT"), w(2, "COMMIT", "COMMIT"),
			}},
			want: CheckThenAct, evidence: []int{1, 2, 4, 6, 9, 10},
			why: []string{"workers 1 and 2 read py_processed (0 rows) at statements 1 and 2, then both inserted (statements 6 and 4) and both committed (statements 9 and 10)"},
			fix: []string{"ON CONFLICT DO NOTHING"},
		},
		{
			// The example's check-then-act through exec, as the proxy
			// received it: worker 2's lookup listed after worker 1's
			// COMMIT yet answered 0 rows (the server ran it before).
			name: "check-then-act past its own guard, the trace's order notwithstanding",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(2, lookup, "SELECT 0"), w(2, charge, "INSERT 0 0"), w(2, charged, "SELECT 1"), w(2, "begin", "BEGIN"), w(2, marker, "INSERT 0 0"), w(2, payment, "INSERT 0 1"), w(2, "commit", "COMMIT"),
			}},
			want: CheckThenAct, evidence: []int{7, 11, 12},
			why: []string{"worker 2 read processed_messages (0 rows) at statement 7, its insert into processed_messages at statement 11 wrote no row (another worker's was there), and it inserted payments at statement 12 anyway"},
		},
		{
			// Near miss: the second looked after the first's commit and
			// found its marker; only one paid.
			name: "one checked after the other's commit and stopped: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "py_payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "SELECT 1 FROM py_processed WHERE event_id = 'e'", "SELECT 0"),
				w(1, "BEGIN", "BEGIN"), w(1, "INSERT INTO py_payments (order_id, event_id, amount) VALUES ('O-40', 'e', 40)", "INSERT 0 1"),
				w(1, "INSERT INTO py_processed (event_id) VALUES ('e')", "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
				w(2, "SELECT 1 FROM py_processed WHERE event_id = 'e'", "SELECT 1"),
			}},
			want: NotRecognised,
		},
		{
			// The example's ack-before-commit behind Kafka, as the proxy
			// followed it: the record's offset committed, then its work
			// (its commit-before-work, which commits the polled batch
			// first, leaves the same trace for one record). It was once
			// named commit-before-work: a batch committed at poll, which
			// the trace cannot show.
			name: "behind Kafka, the offset committed before the work, killed before the lookup: ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				answered("offset committed", killedBefore(ext(w(1, lookup, ""), 0))),
			}},
			want: AckBeforeCommit, evidence: []int{1},
			why: []string{"the consumer group's offset was committed past the record before statement 1, before the transaction that writes payments began; the kill at statement 1 (before it reached the database) lost the effect it had acknowledged"},
			fix: []string{"commit the record's offset only after its transaction has committed"},
		},
		{
			name: "behind Kafka, the offset committed after the lookup, killed at the COMMIT: ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				ext(w(1, lookup, "SELECT 0"), 1), answered("offset committed", ext(w(1, charge, "INSERT 0 1"), 2)), w(1, "begin", "BEGIN"),
				ext(w(1, marker, "INSERT 0 1"), 3), ext(w(1, payment, "INSERT 0 1"), 4), killedBefore(w(1, "commit", "")),
			}},
			want: AckBeforeCommit, evidence: []int{2, 5, 6},
			why: []string{"offset was committed past the record before statement 2, before the transaction that writes payments began, and statement 5 waited uncommitted at the kill", "the kill at statement 6"},
		},
		{
			// Near miss: the commit seen after a write may have come
			// before it (the mark is late by up to a look), or after:
			// the evidence says only that it came before the COMMIT.
			name: "an offset committed inside the transaction is ack before commit, not commit before work",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), answered("offset committed", w(1, payment, "INSERT 0 1")), killedBefore(w(1, "commit", "")),
			}},
			want: AckBeforeCommit, evidence: []int{4, 5},
			why: []string{"the consumer group's offset was committed past the record before statement 4, while statement 4 (payments) waited uncommitted"},
		},
		{
			// Near miss: JetStream's ack before any write is an ack.
			name: "a broker's ack before any write is ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				answered("acked", killedBefore(w(1, lookup, ""))),
			}},
			want: AckBeforeCommit, evidence: []int{1},
			why: []string{"the broker showed the message acked before statement 1"},
		},
		{
			// RabbitMQ: the ack seen once the killed instance was gone,
			// so before the held statement, and said so.
			name: "an ack RabbitMQ showed once the instance was killed is ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), answered("acked at the latest", killedBefore(w(1, payment, ""))),
			}},
			want: AckBeforeCommit, evidence: []int{3},
			why: []string{"the broker showed, once the instance was killed, the message acked before statement 3"},
		},
		{
			// Two consumers of one event in one process, payments then
			// points, sharing processed_messages keyed by the event id.
			name: "marker not scoped: the other consumer's marker found, the effect skipped",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, sharedLookup, "SELECT 0"), w(1, "BEGIN", "BEGIN"), w(1, sharedMarker, "INSERT 0 1"), w(1, plainPay, "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
				w(1, sharedLookup, "SELECT 1"),
			}},
			want: MarkerNotScoped, evidence: []int{3, 4, 5, 6},
			why: []string{"statement 3 wrote the event's row in processed_messages with payments (statement 4), committed at statement 5; statement 6 looked processed_messages up and found that row, and points was never written"},
			fix: []string{"(consumer, event_id) its primary key", "ON CONFLICT (consumer, event_id) DO NOTHING"},
		},
		{
			name: "marker not scoped on MySQL: the guard's insert wrote no row",
			facts: Facts{Dialect: "mysql", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, "START TRANSACTION", "OK"), w(1, "INSERT IGNORE INTO processed_messages (event_id) VALUES (?)", "INSERT 0 1"), w(1, "INSERT INTO payments (order_id, event_id) VALUES (?, ?)", "INSERT 0 1"), w(1, "COMMIT", "OK"),
				w(1, "START TRANSACTION", "OK"), w(1, "INSERT IGNORE INTO processed_messages (event_id) VALUES (?)", "INSERT 0 0"), w(1, "ROLLBACK", "OK"),
			}},
			want: MarkerNotScoped, evidence: []int{2, 3, 4, 6},
			why: []string{"statement 6 inserted into processed_messages and wrote no row: that one was there"},
			fix: []string{"(consumer, event_id) its unique key", "INSERT IGNORE"},
		},
		{
			// Near miss: a marker scoped to the consumer is not found,
			// and the effect lost to a kill after the answer is the ack's.
			name: "a scoped marker not found, the effect lost to a kill after the answer: ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, sharedLookup, "SELECT 0"), w(1, "BEGIN", "BEGIN"), w(1, sharedMarker, "INSERT 0 1"), w(1, plainPay, "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
				answered("202", w(1, scopedLookup, "SELECT 0")), w(1, "BEGIN", "BEGIN"), killedBefore(w(1, pointsInsert, "")),
			}},
			want: AckBeforeCommit, evidence: []int{6, 8},
		},
		{
			// Near miss: the row found was written with this effect, by
			// this consumer: no other consumer's work.
			name: "the marker found was written with the effect itself: not marker not scoped",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, sharedLookup, "SELECT 1"),
			}},
			want: NotRecognised,
		},
		{
			// Near miss: the other consumer's transaction rolled back,
			// its marker never committed.
			name: "a shared marker rolled back before the lookup: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, "BEGIN", "BEGIN"), w(1, sharedMarker, "INSERT 0 1"), w(1, plainPay, "INSERT 0 1"), w(1, "ROLLBACK", "ROLLBACK"),
				w(1, sharedLookup, "SELECT 1"),
			}},
			want: NotRecognised,
		},
		{
			// Near miss: a kill in the trace: what lost the effect is
			// not shown to be the marker.
			name: "a shared marker found after a kill: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: lost, Trace: []consumer.Statement{
				w(1, "BEGIN", "BEGIN"), w(1, sharedMarker, "INSERT 0 1"), w(1, plainPay, "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
				killedAfter(w(1, sharedLookup, "SELECT 1")),
			}},
			want: NotRecognised,
		},
		{
			// Near miss: a duplicate, not a loss.
			name: "a shared marker with a duplicate effect: not marker not scoped",
			facts: Facts{Dialect: "postgres", EffectTable: "points", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "BEGIN", "BEGIN"), w(1, sharedMarker, "INSERT 0 1"), w(1, plainPay, "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
				w(1, sharedLookup, "SELECT 1"),
			}},
			want: NotRecognised,
		},
		{
			// The example's publish-without-id: order.paid under a fresh
			// id on each delivery of one event.
			name: "unstable key: one event's publishes under a fresh id each",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.ExternalDuplicate.Name, External: "paid", Calls: []int{1, 2, 3}}},
				Calls: []invariant.Call{{External: "paid", Seq: 1, Delivery: "evt-1", IdemKey: "a"}, {External: "paid", Seq: 2, Delivery: "evt-1", IdemKey: "b"}, {External: "paid", Seq: 3, IdemKey: "c"}}},
			want: UnstableKey,
			why:  []string{"calls 1, 2 to paid, made for evt-1, carried 2 different ids"},
			fix:  []string{"derive the message's id from the event"},
		},
		{
			// Near miss: two events (an order published twice upstream,
			// under two ids): the consumer's ids followed the events.
			name: "two events' publishes under their own ids: not unstable key",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.ExternalDuplicate.Name, External: "paid", Calls: []int{1, 2}}},
				Calls: []invariant.Call{{External: "paid", Seq: 1, Delivery: "evt-1", IdemKey: "a"}, {External: "paid", Seq: 2, Delivery: "evt-2", IdemKey: "b"}}},
			want: NotRecognised,
		},
		{
			// Near miss: the same id twice: the receiver did not dedupe.
			name: "one event's publishes under one id: not unstable key",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.ExternalDuplicate.Name, External: "paid", Calls: []int{1, 2}}},
				Calls: []invariant.Call{{External: "paid", Seq: 1, Delivery: "evt-1", IdemKey: "a"}, {External: "paid", Seq: 2, Delivery: "evt-1", IdemKey: "a"}}},
			want: NotRecognised,
		},
		{
			name: "additive upsert on PostgreSQL",
			facts: Facts{Dialect: "postgres", EffectTable: "balances", Violations: changed, Trace: []consumer.Statement{
				w(1, "BEGIN", "BEGIN"), w(1, "INSERT INTO balances (account, total) VALUES ($1, $2) ON CONFLICT (account) DO UPDATE SET total = balances.total + excluded.total", "INSERT 0 1"), w(1, "COMMIT", "COMMIT"),
			}},
			want: AdditiveUpsert, evidence: []int{2},
			fix: []string{"ON CONFLICT DO NOTHING", "EXCLUDED.x"},
		},
		{
			name: "additive upsert on MySQL",
			facts: Facts{Dialect: "mysql", EffectTable: "balances", Violations: changed, Trace: []consumer.Statement{
				w(1, "INSERT INTO balances (account, total) VALUES (?, ?) ON DUPLICATE KEY UPDATE total = total + VALUES(total)", "INSERT 0 2"),
			}},
			want: AdditiveUpsert, evidence: []int{1},
			fix: []string{"INSERT IGNORE", "VALUES(x)"},
		},
		{
			name: "marker missing: only the effect is written",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "BEGIN", "BEGIN"), w(1, plainPay, "INSERT 0 1"), killedAfter(w(1, "COMMIT", "COMMIT")),
			}},
			want: MarkerMissing, evidence: []int{2},
			why: []string{"statement 2 wrote payments with no marker read or written"},
		},
		{
			name: "external call without a key",
			facts: Facts{Violations: []invariant.Violation{
				{Invariant: invariant.ExternalDuplicate.Name, External: "payments", Calls: []int{1, 2}},
				{Invariant: invariant.UnkeyedExternalCall.Name, External: "payments", Calls: []int{1, 2}},
			}, Calls: []invariant.Call{{External: "payments", Seq: 1, Keyed: true, Header: "Idempotency-Key", Performed: true}, {External: "payments", Seq: 2, Keyed: true, Header: "Idempotency-Key", Performed: true}}},
			want: ExternalWithoutKey,
			why:  []string{"calls 1, 2 to payments carried no Idempotency-Key header, so payments could not tell a retry from a new request and performed 2 effects for one key"},
			fix:  []string{"send an Idempotency-Key header"},
		},
		{
			name: "external call without a key, to an external that dedupes by none",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.ExternalDuplicate.Name, External: "mail", Calls: []int{3, 4}}},
				Calls: []invariant.Call{{External: "mail", Seq: 3, Performed: true}, {External: "mail", Seq: 4, Performed: true}}},
			want: ExternalWithoutKey,
			fix:  []string{"outbox"},
		},
		{
			name: "unstable key",
			facts: Facts{Violations: []invariant.Violation{
				{Invariant: invariant.ExternalDuplicate.Name, External: "payments", Calls: []int{3, 4}},
				{Invariant: invariant.UnstableIdempotencyKey.Name, External: "payments", Calls: []int{3, 4}},
			}, Calls: []invariant.Call{{External: "payments", Seq: 3, Keyed: true, IdemKey: "a"}, {External: "payments", Seq: 4, Keyed: true, IdemKey: "b"}}},
			want: UnstableKey,
			why:  []string{"calls 3, 4 to payments carried 2 different idempotency keys"},
		},

		{
			name: "effect and marker apart: a pipeline, the effect's Sync before the marker's",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				ext(w(1, lookup, "SELECT 0"), 1), ext(w(1, payment, "INSERT 0 1"), 2), killedBefore(ext(w(1, marker, ""), 3)),
			}},
			want: EffectMarkerApart, evidence: []int{2, 3},
			why: []string{"committed on its own (autocommit)", "the kill before statement 3"},
		},
		{
			name: "effect and marker apart on MySQL with autocommit off: a COMMIT after the effect alone",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "SET autocommit=0", "OK"), w(1, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0"), w(1, "INSERT INTO payments VALUES (?)", "INSERT 0 1"), killedAfter(w(1, "COMMIT", "OK")),
			}},
			want: EffectMarkerApart, evidence: []int{3, 4},
			fix: []string{"INSERT IGNORE INTO processed"},
		},
		{
			// MySQLdb turns autocommit off as it connects: the trace has no
			// SET, and the proxy marks each statement Implicit from the
			// server's status.
			name: "effect and marker apart on MySQL with autocommit off before the delivery",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				implicit(w(1, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0")), implicit(w(1, "INSERT INTO payments VALUES (?)", "INSERT 0 1")), killedAfter(implicit(w(1, "COMMIT", "OK"))),
			}},
			want: EffectMarkerApart, evidence: []int{2, 3},
			why: []string{"committed at statement 3 with no write to processed in its transaction"},
			fix: []string{"INSERT IGNORE INTO processed"},
		},

		{
			// The example's none, two deliveries raced on PostgreSQL, as
			// the proxy showed it: no lookup, the marker's insert in the
			// effect's transaction, its answer unread.
			name: "marker ignored: the marker's insert wrote no row and the payment was written anyway",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				ext(w(1, charge, "INSERT 0 1"), 1), ext(w(2, charge, "INSERT 0 0"), 1), w(1, "begin", "BEGIN"), ext(w(1, marker, "INSERT 0 1"), 2),
				ext(w(2, charged, "SELECT 1"), 2), ext(w(1, payment, "INSERT 0 1"), 3), w(1, "commit", "COMMIT"), w(2, "begin", "BEGIN"),
				ext(w(2, marker, "INSERT 0 0"), 3), ext(w(2, payment, "INSERT 0 1"), 4), w(2, "commit", "COMMIT"),
			}},
			want: MarkerIgnored, evidence: []int{4, 7, 9, 10, 11},
			why: []string{"worker 1 wrote the event's row in processed_messages at statement 4, committed at statement 7; worker 2's insert of it at statement 9 wrote no row, and it wrote payments anyway at statement 10, committed at statement 11, in the same transaction"},
			fix: []string{"INSERT INTO processed_messages … ON CONFLICT DO NOTHING RETURNING …, and go on only if a row came back", "then write payments and COMMIT"},
		},
		{
			// The same on MySQL: the marker an upsert that changes nothing
			// (0 rows), listed before the other's COMMIT that it waited for.
			name: "marker ignored on MySQL: ON DUPLICATE KEY UPDATE counted 0 rows, the payment written anyway",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, myCharge, "INSERT 1"), w(2, myCharge, "INSERT 0"), w(1, "START TRANSACTION", "OK"), w(1, myMarker, "INSERT 1"),
				w(2, "SELECT id, request FROM provider_charges WHERE idempotency_key = ?", "SELECT 1"), w(1, myPayment, "INSERT 1"), w(2, "START TRANSACTION", "OK"),
				w(2, myMarker, "INSERT 0"), w(1, "COMMIT", "OK"), w(2, myPayment, "INSERT 1"), w(2, "COMMIT", "OK"),
			}},
			want: MarkerIgnored, evidence: []int{4, 8, 9, 10, 11},
			why: []string{"worker 1 wrote the event's row in processed_messages at statement 4, committed at statement 9; worker 2's insert of it at statement 8 wrote no row, and it wrote payments anyway at statement 10, committed at statement 11"},
			fix: []string{"INSERT IGNORE INTO processed_messages", "go on only if it affected 1 row"},
		},
		{
			name: "marker ignored in one delivery: INSERT IGNORE affected no row, the effect written after it",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "START TRANSACTION", "OK"), w(1, "INSERT IGNORE INTO processed (id) VALUES (?)", "INSERT 0"), w(1, "INSERT INTO payments VALUES (?)", "INSERT 1"), w(1, "COMMIT", "OK"),
			}},
			want: MarkerIgnored, evidence: []int{2, 3, 4},
			why: []string{"the delivery's insert into processed at statement 2 wrote no row (the event's marker was there), and it wrote payments anyway at statement 3, committed at statement 4"},
		},
		{
			name: "near miss: check-then-act on MySQL, its marker ignored too, keeps its own name",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, myLookup, "SELECT 0"), w(2, myLookup, "SELECT 0"), w(1, "START TRANSACTION", "OK"), w(1, myMarker, "INSERT 1"), w(1, myPayment, "INSERT 1"),
				w(2, "START TRANSACTION", "OK"), w(2, myMarker, "INSERT 0"), w(1, "COMMIT", "OK"), w(2, myPayment, "INSERT 1"), w(2, "COMMIT", "OK"),
			}},
			want: CheckThenAct,
		},
		{
			name: "near miss: a marker's insert that wrote no row, then the effect, rolled back: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, payment, "INSERT 0 1"), w(1, "rollback", "ROLLBACK"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: the safe consumer's guard wrote no row and it stopped, a duplicate made elsewhere: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, lookup, "SELECT 1"), w(1, "rollback", "ROLLBACK"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a guarded insert outside the effect's transaction (the provider's charge) wrote no row: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, charge, "INSERT 0 0"), w(1, charged, "SELECT 1"), w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: the marker's insert wrote no row after the effect's write: not marker ignored",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), w(1, marker, "INSERT 0 0"), w(1, "commit", "COMMIT"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a plain insert that counted no row is no skipped marker",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, "INSERT INTO processed_messages (event_id) SELECT $1 WHERE false", "INSERT 0 0"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a MySQL upsert of the marker that changed its row (2 rows) is no skipped marker",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "START TRANSACTION", "OK"), w(1, "INSERT INTO processed (id, at) VALUES (?, ?) ON DUPLICATE KEY UPDATE at = VALUES(at)", "INSERT 2"), w(1, myPayment, "INSERT 1"), w(1, "COMMIT", "OK"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: the marker ignored, but an effect lost, not duplicated: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
			}},
			want: NotRecognised,
		},
		{
			// The example's none killed after its COMMIT: the trace is the
			// killed attempt's, its marker written; the redelivery that
			// skipped it is not in the trace.
			name: "near miss: none killed after its COMMIT shows the safe consumer's statements: nothing named",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, myCharge, "INSERT 1"), w(1, "START TRANSACTION", "OK"), w(1, myMarker, "INSERT 1"), w(1, myPayment, "INSERT 1"), killedAfter(w(1, "COMMIT", "OK")),
			}},
			want: NotRecognised,
		},

		{
			// The example's none killed after its COMMIT, with the
			// redelivery that followed: its marker insert wrote no row,
			// and it paid again.
			name: "marker ignored across the kill: the redelivery's marker insert wrote no row and it paid again",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				ext(w(1, charge, "INSERT 0 1"), 1), w(1, "begin", "BEGIN"), ext(w(1, marker, "INSERT 0 1"), 2), ext(w(1, payment, "INSERT 0 1"), 3), killedAfter(w(1, "commit", "COMMIT")),
			}, ext(w(1, charge, "INSERT 0 0"), 1), ext(w(1, charged, "SELECT 1"), 2), w(1, "begin", "BEGIN"), ext(w(1, marker, "INSERT 0 0"), 3), ext(w(1, payment, "INSERT 0 1"), 4), w(1, "commit", "COMMIT"))},
			want: MarkerIgnored, evidence: []int{3, 4, 5, 9, 10, 11},
			why: []string{"the killed attempt wrote payments at statement 4, committed at statement 5, with its row in processed_messages (statement 3); after the restart, the redelivery's insert into processed_messages at statement 9 wrote no row (the event's marker was there), and it wrote payments anyway at statement 10, committed at statement 11"},
			fix: []string{"INSERT INTO processed_messages … ON CONFLICT DO NOTHING RETURNING …"},
		},
		{
			name: "marker ignored across the kill on MySQL: the redelivery's upsert of the marker counted 0 rows",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, myCharge, "INSERT 1"), w(1, "START TRANSACTION", "OK"), w(1, myMarker, "INSERT 1"), w(1, myPayment, "INSERT 1"), killedAfter(w(1, "COMMIT", "OK")),
			}, w(1, myCharge, "INSERT 0"), w(1, "START TRANSACTION", "OK"), w(1, myMarker, "INSERT 0"), w(1, myPayment, "INSERT 1"), w(1, "COMMIT", "OK"))},
			want: MarkerIgnored, evidence: []int{3, 4, 5, 8, 9, 10},
			fix: []string{"INSERT IGNORE INTO processed_messages"},
		},
		{
			name: "near miss: the safe consumer's redelivery found the marker and stopped: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}, w(1, lookup, "SELECT 1"))},
			want: NotRecognised,
		},
		{
			name: "near miss: the redelivery's marker insert wrote no row and it rolled back, no effect: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}, w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, "rollback", "ROLLBACK"))},
			want: NotRecognised,
		},
		{
			name: "near miss: the redelivery read the marker before its insert: not marker ignored",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}, w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"))},
			want: NotRecognised,
		},
		{
			name: "near miss: the killed attempt's effect never committed: the redelivery's skipped marker explains no duplicate",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), killedBefore(w(1, "commit", "COMMIT")),
			}, w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 0"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"))},
			want: NotRecognised,
		},
		{
			name: "near miss: marker-after-effect killed after its commit keeps its name with the redelivery in the trace",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}, w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"), w(1, sharedMarker, "INSERT 0 1"))},
			want: EffectMarkerApart, evidence: []int{3, 4},
		},

		// A provider kept as a table of the consumer's database (the
		// effect table), the idempotency key a bound value.
		{
			name: "external call without a key: the provider's table got a row per attempt, each with a NULL key",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				bound(ext(w(1, lookup, "SELECT 0"), 1), "evt-41"), killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 2), nil, "O-41", "41", "order=O-41"))},
				bound(ext(w(1, lookup, "SELECT 0"), 1), "evt-41"), bound(ext(w(1, charge, "INSERT 0 1"), 2), nil, "O-41", "41", "order=O-41"),
				w(1, "begin", "BEGIN"), ext(w(1, marker, "INSERT 0 1"), 3), ext(w(1, payment, "INSERT 0 1"), 4), w(1, "commit", "COMMIT"))},
			want: ExternalWithoutKey, evidence: []int{2, 4},
			why: []string{"statements 2, 4 inserted into provider_charges with no idempotency_key (NULL or empty), one before the kill and one in the redelivery"},
			fix: []string{"send an idempotency_key with every call to provider_charges", "the same on every attempt"},
		},
		{
			name: "unstable key: the provider's table got a row per attempt, each under a key of its own",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				bound(ext(w(1, lookup, "SELECT 0"), 1), "evt-41"), killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 2), "fc40", "O-41", "41", "order=O-41"))},
				bound(ext(w(1, lookup, "SELECT 0"), 1), "evt-41"), bound(ext(w(1, charge, "INSERT 0 1"), 2), "9a1e", "O-41", "41", "order=O-41"))},
			want: UnstableKey, evidence: []int{2, 4},
			why: []string{"under 2 different values of idempotency_key"},
			fix: []string{"never from a random UUID"},
		},
		{
			name: "unstable key on MySQL: the ? placeholders' values",
			facts: Facts{Dialect: "mysql", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(w(1, myCharge, "INSERT 1"), "k1", "O-41", "41", "r"))},
				bound(w(1, myCharge, "INSERT 1"), "k2", "O-41", "41", "r"))},
			want: UnstableKey, evidence: []int{1, 2},
		},
		{
			name: "external call without a key, read from the literal text of a simple query",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), killedAfter(w(1, "INSERT INTO charges (order_id, idem_key) VALUES ('O-1', NULL)", "INSERT 0 1"))},
				w(1, lookup, "SELECT 0"), w(1, "INSERT INTO charges (order_id, idem_key) VALUES ('O-1', NULL)", "INSERT 0 1"))},
			want: ExternalWithoutKey, evidence: []int{2, 4},
		},
		{
			name: "unstable key, read from literals",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), killedAfter(w(1, "INSERT INTO charges (order_id, idempotency_key) VALUES ('O-1', 'a-1')", "INSERT 0 1"))},
				w(1, lookup, "SELECT 0"), w(1, "INSERT INTO charges (order_id, idempotency_key) VALUES ('O-1', 'a-2')", "INSERT 0 1"))},
			want: UnstableKey,
		},
		{
			name: "external call without a key, read from an INSERT … SELECT's literals",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, "INSERT INTO charges (idem_key, order_id) SELECT NULL, 'O-1' WHERE NULL IS NULL OR NOT EXISTS (SELECT 1 FROM charges WHERE idem_key = NULL)", "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT"))},
				w(1, "begin", "BEGIN"), w(1, "INSERT INTO charges (idem_key, order_id) SELECT NULL, 'O-1' WHERE NULL IS NULL OR NOT EXISTS (SELECT 1 FROM charges WHERE idem_key = NULL)", "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"))},
			want: ExternalWithoutKey, evidence: []int{2, 5},
		},
		{
			name: "unstable key, read from an INSERT … SELECT's bound values",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(w(1, "INSERT INTO charges (order_id, idempotency_key) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM charges WHERE idempotency_key = $2)", "INSERT 0 1"), "O-1", "k-1"))},
				bound(w(1, "INSERT INTO charges (order_id, idempotency_key) SELECT $1, $2 WHERE NOT EXISTS (SELECT 1 FROM charges WHERE idempotency_key = $2)", "INSERT 0 1"), "O-1", "k-2"))},
			want: UnstableKey, evidence: []int{1, 2},
		},
		{
			name: "near miss: an INSERT … SELECT from a table gives no value to read: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), killedAfter(w(1, "INSERT INTO charges (order_id, idem_key) SELECT order_id, key FROM staged", "INSERT 0 1"))},
				w(1, lookup, "SELECT 0"), w(1, "INSERT INTO charges (order_id, idem_key) SELECT order_id, key FROM staged", "INSERT 0 1"))},
			want: NotRecognised,
		},
		{
			name: "near miss: killed before its marker, and the redelivery writes one: not marker missing",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, "begin", "BEGIN"), w(1, "INSERT INTO charges (order_id) VALUES ('O-1')", "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT"))},
				w(1, "begin", "BEGIN"), w(1, "INSERT INTO charges (order_id) VALUES ('O-1')", "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"))},
			want: NotRecognised,
		},
		{
			name: "marker missing across the kill: neither attempt reads or writes a marker",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(w(1, payment, "INSERT 0 1"))}, w(1, payment, "INSERT 0 1"))},
			want: MarkerMissing, evidence: []int{1, 2},
		},
		{
			name: "near miss: the keys' values were not seen: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(ext(w(1, charge, "INSERT 0 1"), 1))}, ext(w(1, charge, "INSERT 0 1"), 1))},
			want: NotRecognised,
		},
		{
			name: "near miss: a key in a binary format not read: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 1), consumer.Param{Text: "00ff", Undecoded: true}, "O-41", "41", "r"))},
				bound(ext(w(1, charge, "INSERT 0 1"), 1), consumer.Param{Text: "01ff", Undecoded: true}, "O-41", "41", "r"))},
			want: NotRecognised,
		},
		{
			name: "near miss: one key on both rows (a provider table with no unique key) is neither without a key nor unstable",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 1), "payment-O-41", "O-41", "41", "r"))},
				bound(ext(w(1, charge, "INSERT 0 1"), 1), "payment-O-41", "O-41", "41", "r"))},
			want: NotRecognised,
		},
		{
			name: "near miss: one row without a key, one with: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 1), nil, "O-41", "41", "r"))},
				bound(ext(w(1, charge, "INSERT 0 1"), 1), "payment-O-41", "O-41", "41", "r"))},
			want: NotRecognised,
		},
		{
			name: "near miss: the safe provider's redelivery found the key (0 rows): one row, nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				killedAfter(bound(ext(w(1, charge, "INSERT 0 1"), 1), "payment-O-41", "O-41", "41", "r"))},
				bound(ext(w(1, charge, "INSERT 0 0"), 1), "payment-O-41", "O-41", "41", "r"), bound(ext(w(1, charged, "SELECT 1"), 2), "payment-O-41"))},
			want: NotRecognised,
		},
		{
			name: "near miss: no column of the insert holds an idempotency key: nothing named",
			facts: Facts{Dialect: "postgres", EffectTable: "charges", Violations: duplicate, Trace: trace([]consumer.Statement{
				w(1, lookup, "SELECT 0"), killedAfter(bound(ext(w(1, "INSERT INTO charges (order_id, ref) VALUES ($1, $2)", "INSERT 0 1"), 1), "O-1", "a"))},
				w(1, lookup, "SELECT 0"), bound(ext(w(1, "INSERT INTO charges (order_id, ref) VALUES ($1, $2)", "INSERT 0 1"), 1), "O-1", "b"))},
			want: NotRecognised,
		},

		// Near misses: alike, and not the pattern.
		{
			name: "near miss: the safe consumer's race (the marker insert found the other's row and it stopped) breaks nothing",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(2, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(2, "begin", "BEGIN"), w(2, marker, "INSERT 0 0"), w(2, "rollback", "ROLLBACK"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: the safe consumer killed after its one COMMIT holding marker and effect",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), killedAfter(w(1, "commit", "COMMIT")),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: killed before the effect's COMMIT reached the database is not apart",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, payment, "INSERT 0 1"), killedBefore(w(1, "commit", "")),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a check-then-act race is not named apart (marker and effect share the transaction)",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(2, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(2, "begin", "BEGIN"), w(2, marker, "INSERT 0 0"), w(2, payment, "INSERT 0 1"), w(2, "commit", "COMMIT"),
			}},
			want: CheckThenAct, evidence: []int{2, 6, 8, 9},
		},
		{
			name: "near miss: a pipeline with effect and marker under one Sync, killed before it, committed nothing",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				ext(w(1, lookup, "SELECT 0"), 1), ext(w(1, payment, "INSERT 0 1"), 0), killedAfter(ext(w(1, marker, "INSERT 0 1"), 0)),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: MySQL with autocommit off, killed after the effect before the COMMIT",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "SET autocommit=0", "OK"), w(1, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0"), killedAfter(w(1, "INSERT INTO payments VALUES (?)", "INSERT 0 1")),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: MySQL with autocommit off before the delivery, killed after the effect before the COMMIT",
			facts: Facts{Dialect: "mysql", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				implicit(w(1, "SELECT 1 FROM processed WHERE id = ?", "SELECT 0")), killedAfter(implicit(w(1, "INSERT INTO payments VALUES (?)", "INSERT 0 1"))),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: the second worker read after the first committed is no check-then-act",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
				w(2, lookup, "SELECT 1"), w(2, "begin", "BEGIN"), w(2, payment, "INSERT 0 1"), w(2, "commit", "COMMIT"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: lost effect with the answer after the COMMIT is no ack before commit",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, "begin", "BEGIN"), w(1, marker, "INSERT 0 1"), w(1, payment, "INSERT 0 1"), w(1, "commit", "COMMIT"),
				answered("200", killedBefore(w(1, "SELECT 1", ""))),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: lost effect with no answer in the trace",
			facts: Facts{Dialect: "postgres", EffectTable: "payments", Violations: lost, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), killedBefore(w(1, "begin", "")),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: an upsert that sets the value outright is no additive upsert",
			facts: Facts{Dialect: "postgres", EffectTable: "balances", Violations: changed, Trace: []consumer.Statement{
				w(1, "INSERT INTO balances (account, total) VALUES ($1, $2) ON CONFLICT (account) DO UPDATE SET total = excluded.total, n = excluded.n - 1", "INSERT 0 1"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: an additive upsert with no breach of changed-by-duplicate",
			facts: Facts{Dialect: "postgres", EffectTable: "balances", Violations: duplicate, Trace: []consumer.Statement{
				w(1, "INSERT INTO balances (account, total) VALUES ($1, $2) ON CONFLICT (account) DO UPDATE SET total = balances.total + excluded.total", "INSERT 0 1"),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a lookup of two tables besides the effect names no marker when its write never came",
			facts: Facts{Dialect: "postgres", EffectTable: "provider_charges", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), killedAfter(w(1, "INSERT INTO provider_charges (order_id) VALUES ($1)", "INSERT 0 1")),
			}},
			want: NotRecognised,
		},
		{
			name: "near miss: a keyed external's duplicate with keys (a provider that did not dedupe) is no unkeyed call",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.ExternalDuplicate.Name, External: "payments", Calls: []int{1, 2}}},
				Calls: []invariant.Call{{External: "payments", Seq: 1, Keyed: true, IdemKey: "k"}, {External: "payments", Seq: 2, Keyed: true, IdemKey: "k"}}},
			want: NotRecognised,
		},
		{
			name: "near miss: keys that changed while the provider performed once is no unstable key",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.UnstableIdempotencyKey.Name, External: "payments", Calls: []int{3, 4}}},
				Calls: []invariant.Call{{External: "payments", Seq: 3, Keyed: true, IdemKey: "a", Performed: true}, {External: "payments", Seq: 4, Keyed: true, IdemKey: "b"}}},
			want: NotRecognised,
		},
		{
			name: "near miss: an unkeyed call the provider performed once is no call without a key (nothing duplicated)",
			facts: Facts{Violations: []invariant.Violation{{Invariant: invariant.UnkeyedExternalCall.Name, External: "payments", Calls: []int{1}}},
				Calls: []invariant.Call{{External: "payments", Seq: 1, Keyed: true, Header: "Idempotency-Key", Performed: true}}},
			want: NotRecognised,
		},
		{
			name: "near miss: an effects query names no table, so no statement is the effect",
			facts: Facts{Dialect: "postgres", Violations: duplicate, Trace: []consumer.Statement{
				w(1, lookup, "SELECT 0"), w(1, charge, "INSERT 0 1"), killedAfter(w(1, payment, "INSERT 0 1")),
			}},
			want: NotRecognised,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diagnose(tt.facts)
			if d == nil {
				t.Fatalf("got no diagnosis, want %s", tt.want)
			}
			if d.Pattern != tt.want {
				t.Fatalf("got %s (%s), want %s", d.Pattern, d.Why, tt.want)
			}
			if tt.evidence != nil && !slices.Equal(d.Evidence, tt.evidence) {
				t.Errorf("evidence %v, want %v (%s)", d.Evidence, tt.evidence, d.Why)
			}
			for _, s := range tt.why {
				if !strings.Contains(d.Why, s) {
					t.Errorf("why lacks %q:\n%s", s, d.Why)
				}
			}
			for _, s := range tt.fix {
				if !strings.Contains(d.Fix, s) {
					t.Errorf("fix lacks %q:\n%s", s, d.Fix)
				}
			}
			if tt.want == NotRecognised && (d.Why != "" || d.Fix != "" || d.Evidence != nil) {
				t.Errorf("not recognised carries %+v", d)
			}
		})
	}
}

// TestDiagnoseNothingRecorded: a failing check that recorded no
// statement, no call and no external's breach (the built-in handler's)
// gets no diagnosis at all.
func TestDiagnoseNothingRecorded(t *testing.T) {
	if d := Diagnose(Facts{EffectTable: "payments", Violations: duplicate}); d != nil {
		t.Errorf("got %+v, want none", d)
	}
}

// TestSchemasNameEachPattern: the JSON schemas users validate reports
// against list every pattern a diagnosis can carry.
func TestSchemasNameEachPattern(t *testing.T) {
	for _, schema := range []string{"../../docs/report.schema.json", "../../docs/replay.schema.json"} {
		b, err := os.ReadFile(schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Pattern{CheckThenAct, EffectMarkerApart, MarkerMissing, MarkerIgnored, AckBeforeCommit, AdditiveUpsert, ExternalWithoutKey, UnstableKey, MarkerNotScoped, NotRecognised} {
			if !strings.Contains(string(b), `"`+string(p)+`"`) {
				t.Errorf("%s does not name the pattern %s", schema, p)
			}
		}
	}
}
