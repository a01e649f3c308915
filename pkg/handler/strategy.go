package handler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// Strategy is a way a consumer can be written.
type Strategy string

// The strategies: four safe ones and three unsafe negative controls.
const (
	EventID           Strategy = "event-id"
	ConsumerScoped    Strategy = "consumer-scoped"
	BusinessKey       Strategy = "business-key"
	ExternalKey       Strategy = "external-key"
	None              Strategy = "none"
	CheckThenAct      Strategy = "check-then-act"
	MarkerAfterEffect Strategy = "marker-after-effect"
)

// Strategies lists every strategy, safe ones first.
var Strategies = []Strategy{EventID, ConsumerScoped, BusinessKey, ExternalKey, None, CheckThenAct, MarkerAfterEffect}

// Safe reports whether the strategy is one a consumer should be written with.
func (s Strategy) Safe() bool {
	switch s {
	case None, CheckThenAct, MarkerAfterEffect:
		return false
	}
	return true
}

// KeepsMarkers reports whether the strategy writes processed markers.
func (s Strategy) KeepsMarkers() bool { return s != None }

// Reaches reports whether a delivery handled with the strategy can ever
// reach the fault point: a strategy without a marker lookup has no
// after-check, one without a marker no after-marker, and only a strategy
// that calls out has after-external. (A duplicate stops before most points;
// that depends on the delivery, not on the strategy.)
func (s Strategy) Reaches(p consumer.FaultPoint) bool {
	switch p {
	case consumer.AfterCheck, consumer.AfterMarker:
		return s != None
	case consumer.AfterExternal:
		return s.CallsOut()
	}
	return true
}

// UsesKey reports whether the strategy dedups on a business key.
func (s Strategy) UsesKey() bool { return s == BusinessKey || s == ExternalKey }

// CallsOut reports whether the strategy calls the external provider.
func (s Strategy) CallsOut() bool { return s == ExternalKey }

// Config is a handler as a scenario describes it.
type Config struct {
	Strategy Strategy
	Consumer string // the consumer, unless the strategy is consumer-scoped and a delivery names its own
	Effect   string // the effect table
	Key      template.Template
	// Identity lists the paths compared on redelivery; empty means the whole
	// payload as canonical JSON. IdentityBySchema overrides it per schema version.
	Identity         []string
	IdentityBySchema map[string][]string
	ExternalKey      template.Template
	ExternalAmount   template.Template
	Retention        time.Duration
}

// Gateway is the external provider an external-key handler calls. It keeps
// its own store and does not take part in the handler's transaction.
type Gateway interface {
	// Charge makes a charge, or returns the earlier one for a known key.
	Charge(ctx context.Context, key, amount, orderRef string) (chargeID int64, replayed bool, err error)
}

// Injector is called at every fault point a delivery reaches; an error
// makes the delivery fail there. It may also block, to force an interleaving.
type Injector func(ctx context.Context, p consumer.FaultPoint) error

// FailAt returns an injector that fails at one point.
func FailAt(p consumer.FaultPoint) Injector {
	if p == "" {
		return nil
	}
	return func(_ context.Context, at consumer.FaultPoint) error {
		if at == p {
			return &InjectedError{Point: p}
		}
		return nil
	}
}

// Handler processes deliveries with one strategy against one store.
type Handler struct {
	cfg     Config
	store   Store
	gateway Gateway
	now     func() time.Time
}

// New returns a handler. gateway may be nil unless the strategy calls out;
// now is the clock markers and retention are measured by.
func New(cfg Config, store Store, gateway Gateway, now func() time.Time) *Handler {
	if now == nil {
		now = time.Now
	}
	return &Handler{cfg: cfg, store: store, gateway: gateway, now: now}
}

// Config returns the handler's configuration.
func (h *Handler) Config() Config { return h.cfg }

// Value reads one placeholder of a key template for a delivery: "attempt",
// "consumer", or a path into the envelope such as "data.orderId".
func Value(d consumer.Delivery, name string) string {
	switch name {
	case "attempt":
		return strconv.Itoa(d.Attempt)
	case "consumer":
		return d.Consumer
	}
	return gjson.GetBytes(d.Envelope, name).String()
}

// Identity returns what is compared when an event is redelivered.
func (c Config) IdentityOf(d consumer.Delivery) (string, error) {
	paths := c.Identity
	if p, ok := c.IdentityBySchema[d.Schema]; ok && d.Schema != "" {
		paths = p
	}
	if len(paths) == 0 {
		if d.Payload != "" {
			return Canonical([]byte(d.Payload))
		}
		data := gjson.GetBytes(d.Envelope, "data")
		if !data.Exists() {
			return "null", nil
		}
		return Canonical([]byte(data.Raw))
	}
	out := []byte{'['}
	for i, p := range paths {
		if i > 0 {
			out = append(out, ',')
		}
		r := valueAt(d, p)
		if !r.Exists() {
			out = append(out, "null"...)
			continue
		}
		c, err := Canonical([]byte(r.Raw))
		if err != nil {
			return "", fmt.Errorf("identity path %s: %w", p, err)
		}
		out = append(out, c...)
	}
	return string(append(out, ']')), nil
}

// valueAt reads path p of the delivery's envelope. A plain path into the
// payload ("data.order.id": names of letters, digits, _ and -) is read
// from the payload when the delivery carries it (Delivery.Payload), which
// gives the same value without reading past the envelope's other members
// again.
func valueAt(d consumer.Delivery, p string) gjson.Result {
	if rest, ok := strings.CutPrefix(p, "data."); ok && d.Payload != "" && plainPath(rest) {
		return gjson.Get(d.Payload, rest)
	}
	return gjson.GetBytes(d.Envelope, p)
}

// plainPath reports whether p is names joined by dots, with nothing
// gjson reads as more than a name (wildcards, escapes, modifiers, queries,
// array counts).
func plainPath(p string) bool {
	if p == "" || p[0] == '.' || p[len(p)-1] == '.' || strings.Contains(p, "..") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Scope is the consumer a marker and an effect are written for.
func (h *Handler) Scope(d consumer.Delivery) string {
	if h.cfg.Strategy == ConsumerScoped && d.Consumer != "" {
		return d.Consumer
	}
	return h.cfg.Consumer
}

// Handle processes one delivery in one transaction (two for the
// marker-after-effect strategy) and returns its outcome. inject may be nil.
func (h *Handler) Handle(ctx context.Context, d consumer.Delivery, inject Injector) consumer.Result {
	at := func(p consumer.FaultPoint) error {
		if inject == nil {
			return nil
		}
		return inject(ctx, p)
	}
	if err := at(consumer.BeforeBegin); err != nil {
		return consumer.Result{Outcome: consumer.Failed, Err: err}
	}
	identity := d.Identity
	if identity == "" {
		var err error
		if identity, err = h.cfg.IdentityOf(d); err != nil {
			return consumer.Result{Outcome: consumer.Failed, Err: err}
		}
	}
	// Every strategy records the business key when the handler names one;
	// business-key and external-key also dedup on it, so they need one.
	key := d.BusinessKey
	if key == "" && !h.cfg.Key.IsZero() {
		key = h.cfg.Key.Expand(func(n string) string { return Value(d, n) })
	}
	if h.cfg.Strategy.UsesKey() {
		if key == "" {
			return consumer.Result{Outcome: consumer.Failed, Err: &KeyError{Template: h.cfg.Key.String(), EventID: d.EventID}}
		}
	}
	w := &work{h: h, d: d, identity: identity, key: key, consumer: h.Scope(d), at: at}
	res := w.run(ctx)
	res.Key = key
	if errors.Is(res.Err, ErrUnique) {
		// The safety net: a racing worker inserted first and the unique
		// constraint refused this one. What it wrote is the original.
		res = w.afterRace(ctx, res)
	}
	return res
}

// work is one delivery on its way through the handler.
type work struct {
	h        *Handler
	d        consumer.Delivery
	identity string
	key      string
	consumer string
	at       func(consumer.FaultPoint) error
	external *consumer.ExternalCall
}

func (w *work) fail(tx Tx, err error) consumer.Result {
	if tx != nil {
		_ = tx.Rollback()
	}
	var injected *InjectedError
	if !errors.As(err, &injected) && !errors.Is(err, ErrUnique) && !errors.Is(err, ErrBusy) && (w.external == nil || err != w.external.Err) {
		err = &StoreError{Err: err}
	}
	return consumer.Result{Outcome: consumer.Failed, Err: err, External: w.external}
}

func (w *work) run(ctx context.Context) consumer.Result {
	cfg := w.h.cfg
	if cfg.Strategy == CheckThenAct {
		if res, done := w.checkApart(ctx); done {
			return res
		}
	}
	tx, err := w.h.store.Begin(ctx)
	if err != nil {
		return w.fail(nil, err)
	}
	now := w.h.now()
	if res, done := w.mark(ctx, tx, now); done {
		return res
	}
	if cfg.Strategy.UsesKey() {
		if res, done := w.duplicateByKey(ctx, tx); done {
			return res
		}
	}
	effectID, err := w.writeEffect(ctx, tx, now)
	if err != nil {
		return w.fail(tx, err)
	}
	if err := tx.Commit(); err != nil {
		return w.fail(nil, err)
	}
	if cfg.Strategy == MarkerAfterEffect {
		// The unsafe part: the effect is durable before the marker exists.
		if res, done := w.markAfterEffect(ctx, now); done {
			return res
		}
	}
	res := consumer.Result{Outcome: consumer.Processed, EffectID: effectID, External: w.external}
	if err := w.at(consumer.AfterCommit); err != nil {
		res.Outcome, res.Err = consumer.Crashed, err
	}
	return res
}

// checkApart looks the marker up in a transaction of its own, as the
// check-then-act strategy does, and passes the after-check fault point.
// done is set when the delivery ends there: a duplicate, a conflict or a
// failure.
func (w *work) checkApart(ctx context.Context) (res consumer.Result, done bool) {
	// The check runs on its own, outside the transaction that acts.
	tx, err := w.h.store.Begin(ctx)
	if err != nil {
		return w.fail(nil, err), true
	}
	if res, done := w.check(ctx, tx); done {
		return res, true
	}
	_ = tx.Rollback()
	if err := w.at(consumer.AfterCheck); err != nil {
		return w.fail(nil, err), true
	}
	return consumer.Result{}, false
}

// mark does, in the transaction that acts, what the strategy does before
// the effect: it purges the markers past retention, then checks for the
// marker and inserts it, as the strategy has it. done is set when the
// delivery ends there.
func (w *work) mark(ctx context.Context, tx Tx, now time.Time) (res consumer.Result, done bool) {
	cfg := w.h.cfg
	if cfg.Retention > 0 && cfg.Strategy.KeepsMarkers() {
		if err := tx.PurgeMarkers(ctx, now.Add(-cfg.Retention)); err != nil {
			return w.fail(tx, err), true
		}
	}
	switch cfg.Strategy {
	case None:
	case CheckThenAct:
		if err := w.insertMarker(ctx, tx, now); err != nil {
			return w.fail(tx, err), true
		}
	default:
		if res, done := w.check(ctx, tx); done {
			return res, true
		}
		if err := w.at(consumer.AfterCheck); err != nil {
			return w.fail(tx, err), true
		}
		if cfg.Strategy != MarkerAfterEffect {
			if err := w.insertMarker(ctx, tx, now); err != nil {
				return w.fail(tx, err), true
			}
		}
	}
	return consumer.Result{}, false
}

// duplicateByKey looks for an effect of the delivery's business key. done
// is set when one exists (the delivery is its duplicate, committed with
// its marker) or the lookup failed.
func (w *work) duplicateByKey(ctx context.Context, tx Tx) (res consumer.Result, done bool) {
	if id, ev, found, err := tx.EffectByKey(ctx, w.key); err != nil {
		return w.fail(tx, err), true
	} else if found {
		// The same business event under another event id: this id is
		// now marked, and the original effect is returned.
		if err := tx.Commit(); err != nil {
			return w.fail(nil, err), true
		}
		return consumer.Result{Outcome: consumer.Duplicate, EffectID: id, DuplicateOf: ev}, true
	}
	return consumer.Result{}, false
}

// writeEffect writes the delivery's effect in tx and, for a strategy that
// calls out, makes the external call, passing the fault points after
// each. It returns the effect's id; on an error the caller fails the
// delivery with tx still open.
func (w *work) writeEffect(ctx context.Context, tx Tx, now time.Time) (int64, error) {
	effectID, err := tx.InsertEffect(ctx, Effect{EventID: w.d.EventID, Consumer: w.consumer, BusinessKey: w.key, Payload: payloadOf(w.d), At: now})
	if err != nil {
		return 0, err
	}
	if err := w.at(consumer.AfterEffect); err != nil {
		return 0, err
	}
	if w.h.cfg.Strategy.CallsOut() {
		if err := w.callOut(ctx); err != nil {
			return 0, err
		}
		if err := w.at(consumer.AfterExternal); err != nil {
			return 0, err
		}
	}
	return effectID, nil
}

// markAfterEffect inserts the marker in a transaction of its own, once
// the effect committed, as the marker-after-effect strategy does. done is
// set when that failed.
func (w *work) markAfterEffect(ctx context.Context, now time.Time) (res consumer.Result, done bool) {
	tx, err := w.h.store.Begin(ctx)
	if err != nil {
		return w.fail(nil, err), true
	}
	if err := w.insertMarker(ctx, tx, now); err != nil {
		return w.fail(tx, err), true
	}
	if err := tx.Commit(); err != nil {
		return w.fail(nil, err), true
	}
	return consumer.Result{}, false
}

func (w *work) insertMarker(ctx context.Context, tx Tx, now time.Time) error {
	m := Marker{EventID: w.d.EventID, Consumer: w.consumer, Identity: w.identity, BusinessKey: w.key, At: now}
	if err := tx.InsertMarker(ctx, m); err != nil {
		return err
	}
	return w.at(consumer.AfterMarker)
}

// check looks the marker up. On a hit it ends the transaction and returns
// the duplicate or conflict outcome, with done set.
func (w *work) check(ctx context.Context, tx Tx) (consumer.Result, bool) {
	m, found, err := tx.Marker(ctx, w.d.EventID, w.consumer)
	if err != nil {
		return w.fail(tx, err), true
	}
	if !found {
		return consumer.Result{}, false
	}
	defer tx.Rollback() // nothing was written
	if m.Identity != w.identity {
		return consumer.Result{Outcome: consumer.Conflict, Err: &ConflictError{EventID: w.d.EventID, Stored: m.Identity, Gotten: w.identity}}, true
	}
	return w.original(ctx, tx, m), true
}

// original returns the effect a duplicate of marker m answers with.
func (w *work) original(ctx context.Context, tx Tx, m Marker) consumer.Result {
	res := consumer.Result{Outcome: consumer.Duplicate}
	var found bool
	var err error
	if w.h.cfg.Strategy.UsesKey() && m.BusinessKey != "" {
		var ev string
		res.EffectID, ev, found, err = tx.EffectByKey(ctx, m.BusinessKey)
		if ev != w.d.EventID {
			res.DuplicateOf = ev
		}
	} else {
		res.EffectID, found, err = tx.EffectOf(ctx, w.d.EventID, w.consumer)
	}
	if err != nil {
		return w.fail(nil, err)
	}
	if !found {
		// A marker without its effect: report it rather than invent an id;
		// the checker names the broken invariant.
		res.Err = fmt.Errorf("event %s is marked processed but has no effect", w.d.EventID)
	}
	return res
}

// afterRace handles a unique violation: another worker committed the same
// event first. Read what it wrote and answer as a duplicate (or conflict).
func (w *work) afterRace(ctx context.Context, failed consumer.Result) consumer.Result {
	tx, err := w.h.store.Begin(ctx)
	if err != nil {
		return failed
	}
	defer tx.Rollback()
	m, found, err := tx.Marker(ctx, w.d.EventID, w.consumer)
	switch {
	case err != nil:
		return failed
	case found && m.Identity != w.identity:
		return consumer.Result{Outcome: consumer.Conflict, Err: &ConflictError{EventID: w.d.EventID, Stored: m.Identity, Gotten: w.identity}, Key: w.key}
	case found:
		res := w.original(ctx, tx, m)
		res.Key = w.key
		return res
	case w.h.cfg.Strategy.UsesKey():
		id, ev, found, err := tx.EffectByKey(ctx, w.key)
		if err == nil && found {
			return w.markRaced(ctx, tx, id, ev, failed)
		}
	default:
		// No marker (retention purged it), but the effect's own unique key
		// still knows the event.
		id, found, err := tx.EffectOf(ctx, w.d.EventID, w.consumer)
		if err == nil && found {
			return consumer.Result{Outcome: consumer.Duplicate, EffectID: id}
		}
	}
	return failed
}

func (w *work) callOut(ctx context.Context) error {
	if w.h.gateway == nil {
		return errors.New("strategy external-key needs a gateway")
	}
	value := func(n string) string { return Value(w.d, n) }
	call := &consumer.ExternalCall{IdempotencyKey: w.h.cfg.ExternalKey.Expand(value), Amount: w.h.cfg.ExternalAmount.Expand(value)}
	w.external = call
	call.ChargeID, call.Replayed, call.Err = w.h.gateway.Charge(ctx, call.IdempotencyKey, call.Amount, w.key)
	return call.Err
}

func payloadOf(d consumer.Delivery) string {
	if d.Payload != "" {
		return d.Payload
	}
	data := gjson.GetBytes(d.Envelope, "data")
	if !data.Exists() {
		return "null"
	}
	return data.Raw
}
