package capture

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/tidwall/gjson"
)

// idValue reads an event id: a non-empty string or a number. A string
// with a lone surrogate escape is no id: it would read the same as others.
func idValue(r gjson.Result) string {
	switch r.Type {
	case gjson.String:
		if handler.HasLoneSurrogate([]byte(r.Raw)) {
			return ""
		}
		return r.String()
	case gjson.Number:
		return r.String()
	}
	return ""
}

// duplicateKey returns a key the JSON object rec names twice at its top
// level, where the id, source and data are read: one reader would take the
// first, another the last.
func duplicateKey(rec []byte) (string, bool) {
	return topLevel(rec, nil)
}

// topLevel is duplicateKey that also reads, in the same pass, the values of
// the top-level keys names into vals (a key that is absent reads as a
// Result that does not exist).
func topLevel(rec []byte, names []string, vals ...*gjson.Result) (string, bool) {
	var seen [16]string
	n := 0
	var extra map[string]bool
	dup, found := "", false
	gjson.ParseBytes(rec).ForEach(func(k, v gjson.Result) bool {
		key := k.String()
		for i, name := range names {
			if key == name {
				*vals[i] = v
			}
		}
		for _, s := range seen[:n] {
			if s == key {
				dup, found = key, true
				return false
			}
		}
		if n < len(seen) {
			seen[n] = key
			n++
			return true
		}
		if extra == nil {
			extra = map[string]bool{}
		}
		if extra[key] {
			dup, found = key, true
			return false
		}
		extra[key] = true
		return true
	})
	return dup, found
}

// keyValue reads a business key from a path, if one was given.
func keyValue(doc []byte, path string) string {
	if path == "" {
		return ""
	}
	r := gjson.GetBytes(doc, path)
	if r.IsObject() || r.IsArray() {
		return r.Raw
	}
	return r.String()
}

// cloudEventID joins source and id, the pair that identifies a CloudEvent,
// into one key that no other pair gives: the id's own "%" and "/" are
// escaped (%25, %2F), so the last "/" is always the one between them, and
// a key without a source holds no "/" at all. Ids without either character
// read as they are.
func cloudEventID(source, id string) string {
	if strings.ContainsAny(id, "%/") {
		id = strings.NewReplacer("%", "%25", "/", "%2F").Replace(id)
	}
	if source == "" {
		return id
	}
	return source + "/" + id
}

// cloudRecord reads one CloudEvent in structured JSON mode.
func cloudRecord(name string, opts Options) recordParser {
	paths := []string{"id", "source", "data_base64", "partitionkey", "subject", "data"}
	return func(rec []byte, _ consumer.Location) (Event, string) {
		var f [6]gjson.Result
		if k, dup := topLevel(rec, paths, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]); dup {
			return Event{}, fmt.Sprintf("the record names %s twice", strconv.Quote(k))
		}
		id := idValue(f[0])
		if id == "" {
			if f[0].Type == gjson.String && f[0].Str != "" {
				return Event{}, "the event id holds a lone UTF-16 surrogate escape (\\uD800-\\uDFFF), which names no character"
			}
			return Event{}, "the event has no id (a CloudEvent needs a string id)"
		}
		// rec is the reader's buffer: the event keeps its own copy.
		ev := Event{Source: f[1].String(), Envelope: append([]byte(nil), rec...), Data: f[5].Raw}
		ev.ID = cloudEventID(ev.Source, id)
		if f[2].Exists() {
			ev.Data = "" // the envelope's data is the decoded data_base64
			data, err := base64.StdEncoding.DecodeString(f[2].String())
			if err != nil {
				return Event{}, fmt.Sprintf("data_base64 does not decode: %v", err)
			}
			env := newEnvelope(len(rec) + len(data))
			gjson.ParseBytes(rec).ForEach(func(k, v gjson.Result) bool {
				if k.Str != "data_base64" && k.Str != "data" {
					env.raw(k.Str, []byte(v.Raw))
				}
				return true
			})
			env.raw("data", rawPayload(data))
			ev.Envelope = env.bytes()
		}
		switch {
		case f[3].String() != "":
			ev.Key = f[3].String()
		case f[4].String() != "":
			ev.Key = f[4].String()
		default:
			ev.Key = keyValue(ev.Envelope, opts.Key)
		}
		return ev, ""
	}
}

// kcatRecord reads one line of kcat -J: topic, partition, offset, key,
// headers (a flat [name, value, …] array, or an object) and payload.
// Without --id, a record in the CloudEvents Kafka binding is read as the
// event it carries: in binary mode its id and source come from the ce_id
// and ce_source headers; in structured mode (content-type
// application/cloudevents+json) the payload is the event. The record's
// key stays its business key.
func kcatRecord(name string, opts Options) recordParser {
	seen := map[string]int64{} // highest offset per topic/partition: bounded by partitions
	paths := []string{"topic", "partition", "offset", "key", "payload", "headers", "ts"}
	structured := cloudRecord(name, opts)
	return func(rec []byte, at consumer.Location) (Event, string) {
		f := gjson.GetManyBytes(rec, paths...)
		if !f[0].Exists() || f[1].Type != gjson.Number || f[2].Type != gjson.Number {
			return Event{}, "not a kcat -J record (topic, partition and offset are required)"
		}
		topic, part, off := f[0].String(), f[1].Int(), f[2].Int()
		tp := fmt.Sprintf("%s/%d", topic, part)
		last, ok := seen[tp]
		redelivered := ok && off <= last
		if !ok || off > last {
			seen[tp] = off
		}
		hdrs := kcatHeaders(f[5])
		if opts.ID == "" {
			ce := gjson.GetManyBytes(hdrs, "ce_id", "ce_source", "content-type")
			if ct := strings.ToLower(ce[2].String()); strings.HasPrefix(ct, "application/cloudevents+json") && f[4].Type == gjson.String && gjson.Valid(f[4].Str) {
				ev, why := structured([]byte(strings.TrimSpace(f[4].Str)), at)
				if why == "" && f[3].Type == gjson.String && opts.Key == "" {
					ev.Key = f[3].Str
				}
				ev.Redelivered = redelivered
				return ev, why
			}
			if ce[0].String() != "" {
				return kcatEvent(f, hdrs, cloudEventID(ce[1].String(), ce[0].String()), ce[1].String(), redelivered, opts), ""
			}
		}
		id := ""
		if opts.ID != "" {
			id = idValue(gjson.GetBytes(kcatEnvelope(f, hdrs), opts.ID))
		}
		if id == "" {
			id = fmt.Sprintf("%s/%d/%d", topic, part, off)
		}
		return kcatEvent(f, hdrs, id, "", redelivered, opts), ""
	}
}

// kcatEnvelope is a kcat record's envelope: topic, partition, offset, ts,
// key, headers and data.
func kcatEnvelope(f []gjson.Result, hdrs []byte) []byte {
	env := newEnvelope(len(f[4].Raw) + len(hdrs) + 128)
	env.str("topic", f[0].String())
	env.raw("partition", []byte(f[1].Raw))
	env.raw("offset", []byte(f[2].Raw))
	if f[6].Exists() {
		env.raw("ts", []byte(f[6].Raw))
	}
	if key := kcatKey(f[3]); key != "" {
		env.str("key", key)
	}
	env.raw("headers", hdrs)
	env.raw("data", payload(f[4]))
	return env.bytes()
}

func kcatKey(k gjson.Result) string {
	if !k.Exists() || k.Type == gjson.Null {
		return ""
	}
	if k.Type != gjson.String {
		return k.Raw
	}
	return k.String()
}

// kcatEvent is a kcat record as an event of the given id.
func kcatEvent(f []gjson.Result, hdrs []byte, id, source string, redelivered bool, opts Options) Event {
	body := withID(kcatEnvelope(f, hdrs), id)
	key := kcatKey(f[3])
	if key == "" {
		key = keyValue(body, opts.Key)
	}
	return Event{ID: id, Source: source, Key: key, Envelope: body, Redelivered: redelivered}
}

// withID adds the event's id to a finished envelope, as its last field.
func withID(body []byte, id string) []byte {
	body = append(body[:len(body)-1], `,"id":`...)
	body = appendString(body, id)
	return append(body, '}')
}

// kcatHeaders turns kcat's headers into an object of strings.
func kcatHeaders(h gjson.Result) []byte {
	env := newEnvelope(len(h.Raw))
	switch {
	case h.IsArray():
		arr := h.Array()
		for i := 0; i+1 < len(arr); i += 2 {
			env.str(arr[i].String(), arr[i+1].String())
		}
	case h.IsObject():
		h.ForEach(func(k, v gjson.Result) bool {
			env.str(k.String(), v.String())
			return true
		})
	}
	return env.bytes()
}

// sqsRecord reads one SQS message: from a ReceiveMessage response
// (MessageId, Body, Attributes) or a Lambda event record (messageId, body,
// attributes), or an SNS record of a Lambda event (Sns). An SNS
// Notification in the body is unwrapped: its MessageId and Message count.
func sqsRecord(name string, opts Options) recordParser {
	return func(rec []byte, _ consumer.Location) (Event, string) {
		m, ok := readSQSMessage(rec)
		if !ok {
			return Event{}, "not an SQS message (no MessageId or messageId) nor an SNS record"
		}
		id := m.id
		env := newEnvelope(len(rec))
		if id != "" {
			env.str("sqsMessageId", id)
		}
		var data []byte
		if m.sns.Exists() {
			id = m.sns.Get("MessageId").String()
			env.str("topicArn", m.sns.Get("TopicArn").String())
			if s := m.sns.Get("Subject"); s.Type == gjson.String {
				env.str("subject", s.Str)
			}
			data = payload(m.sns.Get("Message"))
		} else {
			data = payload(gjson.Result{Type: gjson.String, Str: m.body, Raw: string(appendString(nil, m.body))})
		}
		if id == "" {
			return Event{}, "the message has no MessageId"
		}
		if m.group != "" {
			env.str("messageGroupId", m.group)
		}
		n, _ := strconv.Atoi(m.count)
		if m.count != "" {
			env.raw("receiveCount", []byte(strconv.Itoa(n)))
		}
		env.raw("data", data)
		body := env.bytes()
		if opts.ID != "" {
			if v := idValue(gjson.GetBytes(body, opts.ID)); v != "" {
				id = v
			}
		}
		body = withID(body, id)
		key := m.group
		if key == "" {
			key = keyValue(body, opts.Key)
		}
		return Event{ID: id, Key: key, Envelope: body, Redelivered: n > 1}, ""
	}
}

// sqsMessage is what one SQS record names: the message's id, body, group
// and receive count, or the SNS notification it carries instead.
type sqsMessage struct {
	id, body, group, count string
	sns                    gjson.Result
}

// readSQSMessage reads the fields of an SQS record in whichever spelling it
// has, and finds an SNS Notification in the body; ok is false for a record
// that is neither an SQS message nor an SNS record.
func readSQSMessage(rec []byte) (m sqsMessage, ok bool) {
	r := gjson.ParseBytes(rec)
	switch {
	case r.Get("Sns").IsObject():
		m.sns = r.Get("Sns")
	case r.Get("MessageId").Exists():
		m.id, m.body = r.Get("MessageId").String(), r.Get("Body").String()
		m.group, m.count = r.Get("Attributes.MessageGroupId").String(), r.Get("Attributes.ApproximateReceiveCount").String()
	case r.Get("messageId").Exists():
		m.id, m.body = r.Get("messageId").String(), r.Get("body").String()
		m.group, m.count = r.Get("attributes.MessageGroupId").String(), r.Get("attributes.ApproximateReceiveCount").String()
	default:
		return sqsMessage{}, false
	}
	if !m.sns.Exists() && strings.HasPrefix(strings.TrimSpace(m.body), "{") && gjson.Valid(m.body) {
		if b := gjson.Parse(m.body); b.Get("Type").String() == "Notification" && b.Get("MessageId").Exists() {
			m.sns = b
		}
	}
	return m, true
}

// natsRecord reads one message of `nats sub --dump -`: a JSON-encoded
// nats.Msg (Subject, Reply, Header, Data in base64), NUL-terminated.
// A message in the CloudEvents NATS binding is read as the event it
// carries: in binary mode its id and source come from the ce-id and
// ce-source headers; in structured mode (Content-Type
// application/cloudevents+json) the body is the event.
func natsRecord(name string, opts Options) recordParser {
	structured := cloudRecord(name, opts)
	return func(rec []byte, at consumer.Location) (Event, string) {
		f := gjson.GetManyBytes(rec, "Subject", "Reply", "Header", "Data")
		if !f[0].Exists() {
			return Event{}, "not a NATS message dump (no Subject)"
		}
		var raw []byte
		data := []byte("null")
		if f[3].Type == gjson.String {
			var err error
			raw, err = base64.StdEncoding.DecodeString(f[3].Str)
			if err != nil {
				return Event{}, fmt.Sprintf("Data does not decode as base64: %v", err)
			}
			data = rawPayload(raw)
		}
		env := newEnvelope(len(rec))
		env.str("subject", f[0].String())
		var h natsHeaders
		headers := newEnvelope(len(f[2].Raw))
		h.read(f[2], headers)
		stream, seq, delivered := jsAck(f[1].String())
		if strings.HasPrefix(strings.ToLower(h.contentType), "application/cloudevents+json") && validJSON(raw) {
			ev, why := structured(bytes.TrimSpace(raw), at)
			ev.Redelivered = delivered > 1
			return ev, why
		}
		env.raw("headers", headers.bytes())
		if f[1].String() != "" {
			env.str("reply", f[1].String())
		}
		if stream != "" {
			env.str("stream", stream)
			env.raw("seq", []byte(strconv.FormatUint(seq, 10)))
			env.raw("delivered", []byte(strconv.FormatUint(delivered, 10)))
		}
		env.raw("data", data)
		body := env.bytes()
		id, source := h.eventID(body, opts, stream, seq)
		if id == "" {
			return Event{}, "the message has no Nats-Msg-Id header and no JetStream reply subject to take a stream sequence from"
		}
		body = withID(body, id)
		key := keyValue(body, opts.Key)
		if opts.Key == "" {
			key = h.ceKey // as a CloudEvent's partitionkey or subject is
		}
		return Event{ID: id, Source: source, Key: key, Envelope: body, Redelivered: delivered > 1}, ""
	}
}

// natsHeaders is what a NATS message's headers say about the event it
// carries: the ids it may go by, its key and its content type.
type natsHeaders struct {
	msgID, ceID, ceSource, ceKey, contentType string
}

// read takes those from a message's Header and copies each header into
// headers as a string: of one given several values, the first.
func (h *natsHeaders) read(hdr gjson.Result, headers *envelope) {
	hdr.ForEach(func(k, v gjson.Result) bool {
		val := v.String()
		if v.IsArray() {
			val = v.Get("0").String()
		}
		switch strings.ToLower(k.String()) {
		case "nats-msg-id":
			h.msgID = val
		case "ce-id":
			h.ceID = val
		case "ce-source":
			h.ceSource = val
		case "ce-partitionkey":
			h.ceKey = val
		case "ce-subject":
			if h.ceKey == "" {
				h.ceKey = val
			}
		case "content-type":
			h.contentType = val
		}
		headers.str(k.String(), val)
		return true
	})
}

// eventID chooses the id a NATS message goes by, body being its envelope:
// the one at the --id path, the CloudEvent's (source is then its source),
// the Nats-Msg-Id header's, or the stream and sequence of its JetStream
// delivery; "" when it has none of them.
func (h *natsHeaders) eventID(body []byte, opts Options, stream string, seq uint64) (id, source string) {
	if opts.ID != "" {
		id = idValue(gjson.GetBytes(body, opts.ID))
	}
	if id == "" && h.ceID != "" {
		id, source = cloudEventID(h.ceSource, h.ceID), h.ceSource
	}
	if id == "" {
		id = h.msgID
	}
	if id == "" && stream != "" {
		id = fmt.Sprintf("%s/%d", stream, seq)
	}
	return id, source
}

// jsAck reads a JetStream ack subject: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>,
// or the newer form with domain and account hash before the stream.
func jsAck(reply string) (stream string, seq, delivered uint64) {
	if !strings.HasPrefix(reply, "$JS.ACK.") {
		return "", 0, 0
	}
	t := strings.Split(reply, ".")
	var s, d, q int
	switch {
	case len(t) == 9:
		s, d, q = 2, 4, 5
	case len(t) >= 11:
		s, d, q = 4, 6, 7
	default:
		return "", 0, 0
	}
	dv, err1 := strconv.ParseUint(t[d], 10, 64)
	sv, err2 := strconv.ParseUint(t[q], 10, 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0
	}
	return t[s], sv, dv
}

// plainRecord reads one line of plain NDJSON: the id (and key, and
// payload) at the paths given.
func plainRecord(name string, opts Options) recordParser {
	return func(rec []byte, _ consumer.Location) (Event, string) {
		if k, dup := duplicateKey(rec); dup {
			return Event{}, fmt.Sprintf("the record names %s twice", strconv.Quote(k))
		}
		r := gjson.GetBytes(rec, opts.ID)
		id := idValue(r)
		if id == "" {
			if r.Type == gjson.String && r.Str != "" {
				return Event{}, "the event id holds a lone UTF-16 surrogate escape (\\uD800-\\uDFFF), which names no character"
			}
			return Event{}, fmt.Sprintf("no event id at --id path %s", opts.ID)
		}
		data := rec
		if opts.Payload != "" {
			r := gjson.GetBytes(rec, opts.Payload)
			if !r.Exists() {
				return Event{}, fmt.Sprintf("no payload at --payload path %s", opts.Payload)
			}
			data = []byte(r.Raw)
		}
		env := newEnvelope(len(data) + len(id))
		env.str("id", id)
		env.raw("data", data)
		return Event{ID: id, Key: keyValue(rec, opts.Key), Envelope: env.bytes()}, ""
	}
}
