// Package external tests the user's own consumer: it delivers events to it
// over HTTP or as a process per delivery, starts, crashes and restarts it,
// and judges it by the rows its own database ends up with.
//
// It owns a session with a user's consumer (its instances, started
// through pkg/proc, behind a broker, the statement proxy and the
// stand-ins around it) and the System and Lane adapters through which
// pkg/runner and pkg/replay drive it; the journal a long replay into it
// keeps is pkg/journal's, its HTTP client pkg/plainhttp's. Of this module
// it may import any package of pkg/ but the renderers (pkg/report), the
// sets of files (pkg/suite), the built-in handler's PostgreSQL store and
// the benchmark tools (pkg/bench).
//
// Its files, by what they hold:
//   - session.go: the Session (open, the instances, the proxy, a
//     delivery, a crash, close); wire.go and deliver.go, an event on the
//     wire and the consumer's answer; broker.go, the deliveries through
//     a broker and its drain; externals.go, the stand-ins of the
//     services the consumer calls; owner.go, which instance owns a
//     connection or a call; backends.go, the consumer's database
//     sessions a crash ends;
//   - system.go: the runner.System a scenario's checks drive, with
//     statements.go, brokerstatements.go and brokerraces.go, its crashes
//     and races at the consumer's statements, and invariants.go and
//     diagnose.go, how its deliveries are judged and its traces named;
//   - replay.go: the replay.Consumer a replay drives, with
//     replayreport.go (its verdict), emit.go (its reproducer) and
//     findings.go.
package external

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/tidwall/gjson"
)

// Event is one event as the wire carries it.
type Event struct {
	ID      string
	Source  string
	Type    string
	Subject string
	Time    string
	Headers map[string]string
	Data    json.RawMessage // nil when the event has none
	// MsgID is the broker's message id (broker targets); empty means the
	// event id.
	MsgID string
	// Key is the business key (key_of), a Kafka record's key.
	Key string
}

// Defaults for the CloudEvents attributes an event left out.
const (
	DefaultSource = "redeliver"
	DefaultType   = "redeliver.event"
)

// EventOf reads an event from its envelope: {id, source, type, subject,
// time, headers, data}.
func EventOf(envelope []byte) Event {
	g := gjson.ParseBytes(envelope)
	ev := Event{
		ID: g.Get("id").String(), Source: g.Get("source").String(), Type: g.Get("type").String(),
		Subject: g.Get("subject").String(), Time: g.Get("time").String(),
	}
	if ev.Source == "" {
		ev.Source = DefaultSource
	}
	if ev.Type == "" {
		ev.Type = DefaultType
	}
	if d := g.Get("data"); d.Exists() {
		ev.Data = json.RawMessage(d.Raw)
	}
	if h := g.Get("headers"); h.IsObject() {
		ev.Headers = map[string]string{}
		h.ForEach(func(k, v gjson.Result) bool {
			ev.Headers[k.String()] = v.String()
			return true
		})
		ev.bound()
	}
	return ev
}

// qualified is a CloudEvent's id as a capture names it: its source, a
// slash, and the id with % and / escaped (pkg/capture).
func qualified(source, id string) string {
	if source == "" {
		return id
	}
	return source + "/" + strings.NewReplacer("%", "%25", "/", "%2F").Replace(id)
}

// bound reads an event a broker record carried in the CloudEvents binary
// binding (a kcat -J line, a NATS message, a record of a kafka:// topic
// or nats:// stream): its attributes are in ce-* (NATS, HTTP) or ce_*
// (Kafka) headers, and the envelope's id is the capture's, qualified by
// its source. The event delivered is the one carried, as the capture file
// of the same events would deliver it; the binding's headers, and the
// broker's own, stay with the broker.
func (ev *Event) bound() {
	attr := func(name string) (string, bool) {
		for _, k := range []string{"ce-" + name, "ce_" + name} {
			for hk, v := range ev.Headers {
				if strings.EqualFold(hk, k) {
					return v, true
				}
			}
		}
		return "", false
	}
	id, ok := attr("id")
	if _, spec := attr("specversion"); !ok || !spec {
		return
	}
	source, _ := attr("source")
	if ev.ID == id || ev.ID == qualified(source, id) {
		ev.ID = id // not an id --id chose
	}
	if source != "" {
		ev.Source = source
	}
	if v, ok := attr("type"); ok {
		ev.Type = v
	}
	ev.Subject, _ = attr("subject") // a NATS envelope's subject is the message's
	if v, ok := attr("time"); ok {
		ev.Time = v
	}
	for k := range ev.Headers {
		l := strings.ToLower(k)
		if strings.HasPrefix(l, "ce-") || strings.HasPrefix(l, "ce_") || strings.HasPrefix(l, "nats-") || l == "content-type" {
			delete(ev.Headers, k)
		}
	}
	if len(ev.Headers) == 0 {
		ev.Headers = nil
	}
}

// Structured is the event as a structured-mode CloudEvent: the JSON
// document an exec consumer reads on stdin, and the body of an HTTP
// delivery in structured mode.
func (ev Event) Structured() []byte {
	doc := struct {
		SpecVersion     string          `json:"specversion"`
		ID              string          `json:"id"`
		Source          string          `json:"source"`
		Type            string          `json:"type"`
		Subject         string          `json:"subject,omitempty"`
		Time            string          `json:"time,omitempty"`
		DataContentType string          `json:"datacontenttype"`
		Data            json.RawMessage `json:"data,omitempty"`
	}{"1.0", ev.ID, ev.Source, ev.Type, ev.Subject, ev.Time, "application/json", ev.Data}
	b, _ := json.Marshal(doc) // every field marshals
	return b
}

func (ev Event) data() []byte {
	if ev.Data == nil {
		return []byte("null")
	}
	return ev.Data
}

// Request builds the HTTP request of one delivery in the target's mode.
// now stamps standard-webhooks deliveries.
func Request(h *scenario.HTTPTarget, ev Event, now time.Time) (*http.Request, error) {
	body, hdr, err := requestParts(h, ev, now)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(h.Method, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = hdr
	return req, nil
}

// requestParts is the body and the headers of one delivery's request.
func requestParts(h *scenario.HTTPTarget, ev Event, now time.Time) ([]byte, http.Header, error) {
	var body []byte
	hdr := http.Header{}
	for k, v := range ev.Headers {
		hdr.Set(k, v)
	}
	switch h.Mode {
	case scenario.ModeBinary:
		body = ev.data()
		hdr.Set("Content-Type", "application/json")
		hdr.Set("ce-specversion", "1.0")
		hdr.Set("ce-id", ev.ID)
		hdr.Set("ce-source", ev.Source)
		hdr.Set("ce-type", ev.Type)
		if ev.Subject != "" {
			hdr.Set("ce-subject", ev.Subject)
		}
		if ev.Time != "" {
			hdr.Set("ce-time", ev.Time)
		}
	case scenario.ModeRaw:
		body = ev.data()
		hdr.Set("Content-Type", "application/json")
		hdr.Set(h.IDHeader, ev.ID)
	case scenario.ModeStandardWebhooks:
		doc := struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{ev.Type, now.UTC().Format(time.RFC3339), ev.data()}
		body, _ = json.Marshal(doc)
		ts := strconv.FormatInt(now.Unix(), 10)
		hdr.Set("Content-Type", "application/json")
		hdr.Set("webhook-id", ev.ID)
		hdr.Set("webhook-timestamp", ts)
		key, err := scenario.SecretKey(h.Secret)
		if err != nil {
			return nil, nil, err
		}
		hdr.Set("webhook-signature", "v1,"+Sign(key, ev.ID, ts, body))
	default:
		body = ev.Structured()
		hdr.Set("Content-Type", "application/cloudevents+json")
	}
	for k, v := range h.Headers {
		hdr.Set(k, v)
	}
	return body, hdr, nil
}

// Sign is the Standard Webhooks signature: base64 of HMAC-SHA256 over
// "<id>.<timestamp>.<body>".
func Sign(key []byte, id, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + timestamp + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
