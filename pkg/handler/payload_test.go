package handler

import (
	"testing"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/tidwall/gjson"
)

// TestPayloadReadAlready: a delivery that carries its payload, read
// already (Delivery.Payload), gives the identity and the effect payload
// one read from the envelope gives, for plain paths into the payload and
// for every other path.
func TestPayloadReadAlready(t *testing.T) {
	envelopes := []string{
		`{"id":"1","data":{"orderId":"o-1","n":2,"items":[{"sku":"a"},{"sku":"b"}],"a-b":{"c_d":1}}}`,
		`{"id":"1","data":{"orderId":{"x":[1, 2]}},"orderId":"outer"}`,
		`{"id":"1","data":"{\"orderId\":1}"}`,
		`{"id":"1","data":null}`,
		`{"id":"1","data":[{"orderId":3}]}`,
		`{"data":{"a.b":1,"a":{"b":2}},"id":"1"}`,
	}
	paths := [][]string{
		nil,
		{"data.orderId"},
		{"data.n", "data.orderId"},
		{"data.items.1.sku"},
		{"data.items.#.sku"},
		{"data.items.#"},
		{"data.a-b.c_d"},
		{"data.a\\.b"},
		{"data.a.b"},
		{"data.0.orderId"},
		{"data.missing", "id"},
		{"data.orderId|@reverse"},
		{"data.@this"},
		{"data.", "data..x"},
		{"orderId"},
	}
	for _, env := range envelopes {
		payload := gjson.Get(env, "data").Raw
		for _, p := range paths {
			cfg := Config{Identity: p}
			plain := consumer.Delivery{Envelope: []byte(env)}
			carried := plain
			carried.Payload = payload
			want, werr := cfg.IdentityOf(plain)
			got, gerr := cfg.IdentityOf(carried)
			if got != want || (werr == nil) != (gerr == nil) {
				t.Errorf("%s, identity %q: %q (%v) with the payload carried, %q (%v) without", env, p, got, gerr, want, werr)
			}
			if a, b := payloadOf(carried), payloadOf(plain); a != b {
				t.Errorf("%s: payload %q carried, %q read", env, a, b)
			}
		}
	}
}
