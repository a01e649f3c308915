// Package standin runs stand-ins for the external services a consumer under
// test calls (a payment provider over HTTP, a mail server over SMTP) on free
// 127.0.0.1 ports, and subscribes stand-ins to what it publishes downstream
// (a NATS subject, a RabbitMQ queue, a Kafka topic), and records every call
// or message they receive: when it came, which delivery was in flight, what
// was asked, what was answered, and whether the stand-in performed it (an
// effect) or only answered it from a stored idempotency answer. It judges
// nothing: deciding whether an effect happened twice is left to the caller,
// which reads Calls.
//
// It may import pkg/template (effect keys), github.com/tidwall/gjson,
// github.com/emersion/go-smtp and the broker clients
// github.com/nats-io/nats.go, github.com/rabbitmq/amqp091-go and
// github.com/twmb/franz-go (kgo, and kadm to list end offsets), and no
// other redeliver package.
package standin

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// Call is one request (HTTP), mail (SMTP) or published message (PUBLISH) a
// stand-in received.
type Call struct {
	External  string              // the stand-in's name, e.g. "payments"
	Seq       int                 // 1-based, in arrival order, per stand-in, across the stand-in's life until Reset
	At        time.Time           // when it arrived
	Delivery  string              // what SetDelivery said was in flight when the call came ("" none)
	Method    string              // HTTP method; "SMTP" for a mail; "PUBLISH" for a published message
	Path      string              // HTTP path (with no query); for SMTP: ""; PUBLISH: the subject, queue or topic
	Header    map[string][]string // HTTP request headers, canonical keys; SMTP: the message's headers; PUBLISH: the message's headers (AMQP: also its Message-Id, Content-Type and Type properties)
	Body      []byte              // request body; SMTP: the whole message (headers and body) as received; PUBLISH: the payload
	Key       string              // the effect key: the stand-in's key template expanded over the call's envelope
	IdemKey   string              // value of the idempotency header ("" absent or none configured); SMTP: ""; PUBLISH: the event id ("" none)
	Performed bool                // an effect: the stand-in performed it (false: replayed, refused 409/422, cut before)
	Replayed  bool                // answered with the stored answer of the same idempotency key and same body; PUBLISH: an event id already seen with the same Key
	Status    int                 // the HTTP status answered; 0 when no answer was sent (timeout fault, cut while held); SMTP: 250 accepted
	Answer    string              // the response body sent (or that would have been sent)
	From      string              // SMTP envelope sender
	To        []string            // SMTP envelope recipients
	Subject   string              // SMTP Subject header (decoded)
}

// expandKey expands key with gjson paths over the envelope env; a missing
// path expands to "".
func expandKey(key template.Template, env []byte) string {
	if key.IsZero() {
		return ""
	}
	return key.Expand(func(name string) string {
		return gjson.GetBytes(env, name).String()
	})
}

// httpEnvelope is the JSON a key template reads for an HTTP request:
//
//	{"method":…,"path":…,"query":{name: first value},"headers":{lower-case name: first value},"body":…}
//
// The body is the request body as JSON when it is valid JSON (and valid
// UTF-8), an object of first values when the Content-Type is
// application/x-www-form-urlencoded, else a string. The result is always
// valid JSON.
func httpEnvelope(method, path string, query url.Values, header http.Header, body []byte) []byte {
	env := struct {
		Method  string            `json:"method"`
		Path    string            `json:"path"`
		Query   map[string]string `json:"query"`
		Headers map[string]string `json:"headers"`
		Body    json.RawMessage   `json:"body"`
	}{
		Method:  method,
		Path:    path,
		Query:   firstValues(query, false),
		Headers: firstValues(header, true),
		Body:    bodyJSON(header.Get("Content-Type"), body),
	}
	b, err := json.Marshal(env)
	if err != nil {
		// Cannot happen: every part is a string map or JSON made here.
		b, _ = json.Marshal(map[string]string{"method": method, "path": path})
	}
	return b
}

// bodyJSON is a request body as a JSON value (see httpEnvelope).
func bodyJSON(contentType string, body []byte) json.RawMessage {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "application/x-www-form-urlencoded" {
		vals, _ := url.ParseQuery(string(body)) // what parsed, even after a bad pair
		b, err := json.Marshal(firstValues(vals, false))
		if err == nil {
			return b
		}
	}
	if utf8.Valid(body) && json.Valid(body) {
		return json.RawMessage(body)
	}
	b, _ := json.Marshal(string(body))
	return b
}

// firstValues maps each name to its first value; lower turns names to lower case.
func firstValues(m map[string][]string, lower bool) map[string]string {
	out := make(map[string]string, len(m))
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names) // so that of two names equal in lower case the same one wins every time
	for _, k := range names {
		v := m[k]
		if len(v) == 0 {
			continue
		}
		name := k
		if lower {
			name = strings.ToLower(k)
		}
		if _, ok := out[name]; !ok {
			out[name] = v[0]
		}
	}
	return out
}

// smtpEnvelope is the JSON a key template reads for a mail:
// {"from":…,"to":"a@x,b@y","subject":…,"headers":{lower-case name: first value},"body":"the text body"}.
func smtpEnvelope(from string, to []string, subject string, header map[string][]string, body string) []byte {
	b, _ := json.Marshal(struct {
		From    string            `json:"from"`
		To      string            `json:"to"`
		Subject string            `json:"subject"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}{from, strings.Join(to, ","), subject, firstValues(header, true), body})
	return b
}

// copyCalls returns copies of calls, in Seq order.
func copyCalls(calls []*Call) []Call {
	out := make([]Call, len(calls))
	for i, c := range calls {
		out[i] = *c
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}
