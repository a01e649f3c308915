package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// event is one payment event, however it came in.
type event struct {
	id      string
	orderID string
	amount  string // the JSON number as sent, e.g. "10" or "12.50"
	payload string // canonical JSON of data: what a redelivery must match
}

// badEvent is a request the consumer will never accept: answered 4xx
// (rejected), so a broker stops redelivering it.
type badEvent struct {
	status int
	msg    string
}

func (e *badEvent) Error() string { return e.msg }

func rejectf(format string, args ...any) error {
	return &badEvent{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// The wire modes, told apart by headers as a real receiver would.
const (
	modeStructured = "structured"
	modeBinary     = "binary"
	modeRaw        = "raw"
	modeWebhook    = "standard-webhooks"
)

func detectMode(h http.Header) string {
	ct, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	switch {
	case ct == "application/cloudevents+json":
		return modeStructured
	case h.Get("ce-specversion") != "":
		return modeBinary
	case h.Get("webhook-id") != "":
		return modeWebhook
	default:
		return modeRaw
	}
}

// decodeRequest reads an event from an HTTP request's headers and body.
// secret is the Standard Webhooks key (nil: signed requests are refused,
// since they cannot be verified).
func decodeRequest(h http.Header, body []byte, idHeader string, secret []byte, now time.Time) (event, string, error) {
	mode := detectMode(h)
	switch mode {
	case modeStructured:
		ev, err := decodeCloudEvent(body)
		return ev, mode, err
	case modeBinary:
		if v := h.Get("ce-specversion"); v != "1.0" {
			return event{}, mode, rejectf("ce-specversion %q is not 1.0", v)
		}
		ev, err := decodeData(h.Get("ce-id"), body)
		return ev, mode, err
	case modeWebhook:
		if err := verifyWebhook(h, body, secret, now); err != nil {
			return event{}, mode, err
		}
		var msg struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			return event{}, mode, rejectf("body is not a Standard Webhooks JSON payload: %v", err)
		}
		ev, err := decodeData(h.Get("webhook-id"), msg.Data)
		return ev, mode, err
	default:
		ev, err := decodeData(h.Get(idHeader), body)
		return ev, mode, err
	}
}

// decodeCloudEvent reads a structured-mode CloudEvent (also what --exec
// reads on stdin).
func decodeCloudEvent(body []byte) (event, error) {
	var ce struct {
		SpecVersion string          `json:"specversion"`
		ID          string          `json:"id"`
		Data        json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &ce); err != nil {
		return event{}, rejectf("body is not a CloudEvent: %v", err)
	}
	if ce.SpecVersion != "1.0" {
		return event{}, rejectf("specversion %q is not 1.0", ce.SpecVersion)
	}
	return decodeData(ce.ID, ce.Data)
}

// decodeData reads {orderId, amount}.
func decodeData(id string, data []byte) (event, error) {
	if id == "" {
		return event{}, rejectf("the event has no id")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return event{}, rejectf("data is not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return event{}, rejectf("data is not a JSON object")
	}
	order, ok := obj["orderId"].(string)
	if !ok || order == "" {
		return event{}, rejectf("data.orderId is missing or not a string")
	}
	amount := "0"
	if a, present := obj["amount"]; present {
		n, ok := a.(json.Number)
		if !ok {
			return event{}, rejectf("data.amount is not a number")
		}
		amount = n.String()
	}
	canon, err := json.Marshal(obj) // map keys sorted: one spelling per payload
	if err != nil {
		return event{}, err
	}
	return event{id: id, orderID: order, amount: amount, payload: string(canon)}, nil
}

// webhookKey turns a Standard Webhooks secret into the HMAC key.
func webhookKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, errors.New("the part after whsec_ is not base64")
		}
		return key, nil
	}
	return []byte(secret), nil
}

// webhookTolerance is how far webhook-timestamp may be from now, as the
// Standard Webhooks reference libraries allow.
const webhookTolerance = 5 * time.Minute

// verifyWebhook checks webhook-signature over "<id>.<timestamp>.<body>".
func verifyWebhook(h http.Header, body, key []byte, now time.Time) error {
	unauthorized := func(msg string) error { return &badEvent{status: http.StatusUnauthorized, msg: msg} }
	if key == nil {
		return unauthorized("a signed webhook, but no --secret-env to verify it with")
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return unauthorized("webhook-timestamp is not unix seconds")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > webhookTolerance || d < -webhookTolerance {
		return unauthorized("webhook-timestamp is more than 5 minutes from now")
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.", id, ts)
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, b64, ok := strings.Cut(sig, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return unauthorized("no webhook-signature matches")
}
