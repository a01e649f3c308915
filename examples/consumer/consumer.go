package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync"
	"time"
)

// flaw is one way of getting idempotency wrong, on purpose.
type flaw string

const (
	flawSafe               flaw = ""
	flawNone               flaw = "none"                    // no dedup at all
	flawCheckThenAct       flaw = "check-then-act"          // marker looked up outside the transaction, its key not relied on
	flawAckBeforeCommit    flaw = "ack-before-commit"       // answers 202, then does the work
	flawMarkerAfterEffect  flaw = "marker-after-effect"     // payment and marker in two transactions
	flawMarkerAfterAuto    flaw = "marker-after-autocommit" // payment and marker as two statements, each its own transaction
	flawExternalWithoutKey flaw = "external-without-key"    // calls the provider with no idempotency key
	flawCommitBeforeWork   flaw = "commit-before-work"      // Kafka: commits a polled batch's offsets, then does the work
	flawCommitAfterAnswer  flaw = "commit-after-answer"     // answers from inside its transaction, commits after
	flawChargeWithoutKey   flaw = "charge-without-key"      // --provider: charges with no Idempotency-Key header
	flawRandomKey          flaw = "random-key"              // a fresh idempotency key on every attempt
	flawMailBeforeCommit   flaw = "mail-before-commit"      // --smtp: mails the confirmation before its transaction commits
	flawPublishWithoutID   flaw = "publish-without-id"      // --publish: order.paid under a fresh id each time, no Nats-Msg-Id
)

var flaws = []flaw{flawNone, flawCheckThenAct, flawAckBeforeCommit, flawMarkerAfterEffect, flawMarkerAfterAuto, flawExternalWithoutKey, flawCommitBeforeWork, flawCommitAfterAnswer,
	flawChargeWithoutKey, flawRandomKey, flawMailBeforeCommit, flawPublishWithoutID}

func parseFlaw(s string) (flaw, error) {
	if s == "" || s == "safe" {
		return flawSafe, nil
	}
	for _, f := range flaws {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("--flaw %q is not one of none, check-then-act, ack-before-commit, marker-after-effect, marker-after-autocommit, external-without-key, commit-before-work, commit-after-answer, charge-without-key, random-key, mail-before-commit, publish-without-id", s)
}

func (f flaw) String() string {
	if f == flawSafe {
		return "safe"
	}
	return "flaw: " + string(f)
}

// consumer handles payment events: one provider charge and one payments
// row per order event, however often it is delivered.
type consumer struct {
	store    *store
	flaw     flaw
	window   func() error // the downstream latency, spent where each flaw's window is
	secret   []byte       // Standard Webhooks key; nil: signed requests are refused
	idHeader string
	log      io.Writer
	// provider charges over HTTP when set (--provider), instead of the
	// simulated provider's table; mail sends the confirmation (--smtp).
	provider *provider
	mail     *mailer
	publish  *publisher    // --publish: order.paid after each commit
	take     time.Duration // --take: the wait before a broker delivery's first statement

	logMu      sync.Mutex
	background sync.WaitGroup // ack-before-commit's work still running
}

func (c *consumer) logf(format string, args ...any) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	log.New(c.log, "consumer: ", 0).Printf(format, args...)
}

// chargeKey is the provider idempotency key: stable across redeliveries of
// one order, different between orders.
func chargeKey(ev event) string { return "payment-" + ev.orderID }

// process is the consumer's work for one delivery. Where a flaw changes
// the safe code, the comment says which window it opens; window() is
// called exactly there.
func (c *consumer) process(ctx context.Context, ev event) (result, error) {
	r, err := c.processAs(ctx, ev, c.flaw)
	if err == nil && c.publish != nil && (r.Outcome == "processed" || r.Outcome == "duplicate") {
		// Every delivery of a paid order publishes, a duplicate too: a
		// kill between the commit and the publish loses nothing, and the
		// repeats carry the first one's id.
		if err := c.publish.paid(ev); err != nil {
			return result{}, err
		}
	}
	return r, err
}

func (c *consumer) processAs(ctx context.Context, ev event, f flaw) (result, error) {
	if f != flawNone {
		// A read outside any transaction: a fast path for the safe
		// consumer (the transaction below decides), the only guard for
		// check-then-act and marker-after-effect.
		if r, found, err := c.store.marker(ctx, ev); err != nil || found {
			return r, err
		}
	}
	key := chargeKey(ev)
	switch f {
	case flawExternalWithoutKey, flawChargeWithoutKey:
		key = "" // a retry after a crash charges again
	case flawRandomKey:
		key = randomKey() // so does a retry under a key of its own
	}
	charge, err := c.charge(ctx, key, ev)
	if err != nil {
		return result{}, err
	}
	return c.commitAs(ctx, ev, f, charge)
}

// commitAs commits the delivery's payment, charged already, as flaw f
// does: where it writes the marker, and what it does between.
func (c *consumer) commitAs(ctx context.Context, ev event, f flaw, charge int64) (result, error) {
	switch f {
	case flawMarkerAfterEffect:
		id, err := c.store.commitEffect(ctx, ev, charge)
		if err != nil {
			return result{}, err
		}
		// Window: the payment is committed, the marker not yet; a crash
		// here and the redelivery pays again.
		if err := c.window(); err != nil {
			return result{}, err
		}
		return result{Outcome: "processed", PaymentID: id}, c.store.commitMarker(ctx, ev)
	case flawMarkerAfterAuto:
		// No BEGIN: each statement commits as it is answered, as
		// pool.Exec and many ORMs run them.
		id, err := c.store.insertPaymentAlone(ctx, ev, charge)
		if err != nil {
			return result{}, err
		}
		// Window: between the two statements, the payment committed.
		if err := c.window(); err != nil {
			return result{}, err
		}
		return result{Outcome: "processed", PaymentID: id}, c.store.commitMarker(ctx, ev)
	case flawNone, flawCheckThenAct:
		// Window (check-then-act): between the marker lookup above and
		// the insert below, a concurrent delivery of the same event
		// passes the same check.
		if err := c.window(); err != nil {
			return result{}, err
		}
		return c.store.commit(ctx, ev, charge, false)
	case flawMailBeforeCommit:
		return c.mailThenCommit(ctx, ev, charge)
	default:
		return c.chargedThenCommit(ctx, ev, charge)
	}
}

// mailThenCommit is mail-before-commit: the customer is mailed inside
// the payment's transaction, before it commits.
func (c *consumer) mailThenCommit(ctx context.Context, ev event, charge int64) (result, error) {
	r, commit, err := c.store.uncommitted(ctx, ev, charge)
	if err != nil || r.Outcome != "processed" {
		return r, err
	}
	// Window: the customer is mailed, nothing is committed yet; a
	// crash now rolls back, and the redelivery mails again.
	if c.mail == nil {
		return result{}, errNoMailer
	}
	if err := c.mail.confirm(ev); err != nil {
		return result{}, err
	}
	if err := c.window(); err != nil {
		return result{}, err
	}
	return r, commit()
}

// chargedThenCommit commits the payment the provider charged, with its
// marker in the same transaction, then mails the customer.
func (c *consumer) chargedThenCommit(ctx context.Context, ev event, charge int64) (result, error) {
	// Window: the provider has charged, nothing is committed here
	// yet; a crash now is retried, and only the idempotency key keeps
	// the retry from charging twice (external-without-key has none).
	if err := c.window(); err != nil {
		return result{}, err
	}
	r, err := c.store.commit(ctx, ev, charge, true)
	if err == nil && r.Outcome == "processed" && c.mail != nil {
		// Mailed once the payment is committed, by the delivery that
		// committed it: at most once (a crash between the commit and
		// the mail loses it; at least once needs an outbox).
		if err := c.mail.confirm(ev); err != nil {
			c.logf("%v", err)
		}
	}
	return r, err
}

// charge charges the order at the provider: over HTTP with --provider,
// else at the simulated provider's table.
func (c *consumer) charge(ctx context.Context, key string, ev event) (int64, error) {
	if c.provider != nil {
		return c.provider.chargeOver(ctx, key, ev)
	}
	return c.store.charge(ctx, key, ev)
}

// routes: POST (any path) takes an event, GET /healthz says it is ready.
func (c *consumer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("POST /", c.handleEvent)
	return mux
}

func (c *consumer) handleEvent(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		answer(w, http.StatusBadRequest, map[string]string{"error": "cannot read the body: " + err.Error()})
		return
	}
	ev, _, err := decodeRequest(r.Header, body, c.idHeader, c.secret, time.Now())
	var bad *badEvent
	if errors.As(err, &bad) {
		answer(w, bad.status, map[string]string{"error": bad.msg})
		return
	}
	if c.flaw == flawAckBeforeCommit {
		c.ackThenProcess(w, r.Context(), ev)
		return
	}
	if c.flaw == flawCommitAfterAnswer {
		c.answerThenCommit(w, r.Context(), ev)
		return
	}
	res, err := c.process(r.Context(), ev)
	c.reply(w, ev, res, err)
}

// ackThenProcess is the ack-before-commit flaw: the answer goes out, then
// the work starts. A crash in between loses an acknowledged event: the
// broker will not deliver it again.
func (c *consumer) ackThenProcess(w http.ResponseWriter, ctx context.Context, ev event) {
	if r, found, err := c.store.marker(ctx, ev); err != nil || found {
		c.reply(w, ev, r, err)
		return
	}
	answer(w, http.StatusAccepted, result{Outcome: "accepted"})
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		if _, err := c.processAs(context.Background(), ev, flawSafe); err != nil {
			c.logf("event %s, acknowledged, then: %v", ev.id, err)
		}
	}()
}

// answerThenCommit is the commit-after-answer flaw, as a middleware that
// commits once the handler returned does it: the payment and its marker
// are written in one transaction, the answer goes out, and the
// transaction commits after (its window between). A crash there loses an
// acknowledged payment; without one, the payment is there a moment after
// the answer.
func (c *consumer) answerThenCommit(w http.ResponseWriter, ctx context.Context, ev event) {
	if r, found, err := c.store.marker(ctx, ev); err != nil || found {
		c.reply(w, ev, r, err)
		return
	}
	charge, err := c.store.charge(ctx, chargeKey(ev), ev)
	if err != nil {
		c.reply(w, ev, result{}, err)
		return
	}
	res, commit, err := c.store.uncommitted(context.Background(), ev, charge)
	if err != nil {
		c.reply(w, ev, result{}, err)
		return
	}
	c.background.Add(1)
	defer func() {
		go func() {
			defer c.background.Done()
			c.window()
			if err := commit(); err != nil {
				c.logf("event %s, answered, then: %v", ev.id, err)
			}
		}()
	}()
	c.reply(w, ev, res, nil)
}

func (c *consumer) reply(w http.ResponseWriter, ev event, res result, err error) {
	switch {
	case errors.Is(err, errConflict):
		answer(w, http.StatusConflict, map[string]string{"outcome": "conflict", "error": err.Error()})
	case err != nil:
		c.logf("event %s: %v", ev.id, err)
		answer(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
	case res.Outcome == "conflict":
		answer(w, http.StatusConflict, map[string]string{"outcome": "conflict", "error": "event " + ev.id + " was processed with another payload"})
	default:
		answer(w, http.StatusOK, res)
	}
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// execOne is --exec: one structured CloudEvent on stdin, the outcome on
// stdout, the answer in the exit status.
func (c *consumer) execOne(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	body, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
	if err != nil {
		c.logf("read stdin: %v", err)
		return exitTempFail
	}
	ev, err := decodeCloudEvent(body)
	var bad *badEvent
	if errors.As(err, &bad) {
		c.logf("rejected: %s", bad.msg)
		return exitRejected
	}
	res, err := c.process(ctx, ev)
	switch {
	case errors.Is(err, errConflict) || (err == nil && res.Outcome == "conflict"):
		c.logf("event %s: conflict", ev.id)
		return exitConflict
	case err != nil:
		c.logf("event %s: %v", ev.id, err)
		return exitTempFail
	}
	json.NewEncoder(stdout).Encode(res)
	return exitAcked
}
