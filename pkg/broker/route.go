package broker

import (
	"strings"

	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// Route is a NATS subject or AMQP routing key, written as a template over
// the event: "orders.{type}", "payments.{data.orderId}".
type Route struct{ t template.Template }

// ParseRoute reads a route template.
func ParseRoute(s string) (Route, error) {
	t, err := template.Parse(s)
	if err != nil {
		return Route{}, err
	}
	return Route{t: t}, nil
}

// String returns the template as written.
func (r Route) String() string { return r.t.String() }

// IsZero reports whether no route was given.
func (r Route) IsZero() bool { return r.t.IsZero() }

// For is the route of one message: its own Route if it has one, else the
// template filled from its attributes (id, source, type, subject, time)
// and data (data.PATH).
func (r Route) For(m Message) string {
	if m.Route != "" {
		return m.Route
	}
	var doc []byte
	return r.t.Expand(func(name string) string {
		switch name {
		case "id":
			return m.ID
		case "source":
			return m.Source
		case "type":
			return m.Type
		case "subject":
			return m.Subject
		case "time":
			return m.Time
		}
		if doc == nil {
			doc = m.Structured()
		}
		v := gjson.GetBytes(doc, name)
		if v.IsObject() || v.IsArray() {
			return v.Raw
		}
		return v.String()
	})
}

// Pattern is the route with its placeholders replaced by wildcards, so
// that a stream or binding created for it takes every message it routes:
// each placeholder by wild ("*", one token), and one that ends the route
// by tail (">" on NATS, "#" on AMQP: a value with dots in it, such as the
// type order.created, is several tokens).
func (r Route) Pattern(wild, tail string) string {
	parts := r.t.Parts()
	var b strings.Builder
	for i, p := range parts {
		switch {
		case !p.Field:
			b.WriteString(p.Text)
		case i == len(parts)-1:
			b.WriteString(tail)
		default:
			b.WriteString(wild)
		}
	}
	return b.String()
}
