package external

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/scenario"
)

func TestRequestModes(t *testing.T) {
	ev := EventOf([]byte(`{"id":"evt-1","source":"shop","type":"order.paid","subject":"o-1","headers":{"traceparent":"t"},"data":{"orderId":"O-1","amount":10}}`))
	now := time.Unix(1700000000, 0)
	tests := []struct {
		mode    string
		body    string
		headers map[string]string
	}{
		{scenario.ModeStructured, `{"specversion":"1.0","id":"evt-1","source":"shop","type":"order.paid","subject":"o-1","datacontenttype":"application/json","data":{"orderId":"O-1","amount":10}}`,
			map[string]string{"Content-Type": "application/cloudevents+json", "Traceparent": "t", "X-Tenant": "acme"}},
		{scenario.ModeBinary, `{"orderId":"O-1","amount":10}`,
			map[string]string{"Content-Type": "application/json", "Ce-Specversion": "1.0", "Ce-Id": "evt-1", "Ce-Source": "shop", "Ce-Type": "order.paid", "Ce-Subject": "o-1"}},
		{scenario.ModeRaw, `{"orderId":"O-1","amount":10}`,
			map[string]string{"Content-Type": "application/json", "Idempotency-Key": "evt-1"}},
		{scenario.ModeStandardWebhooks, `{"type":"order.paid","timestamp":"2023-11-14T22:13:20Z","data":{"orderId":"O-1","amount":10}}`,
			map[string]string{"Content-Type": "application/json", "Webhook-Id": "evt-1", "Webhook-Timestamp": "1700000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			h := &scenario.HTTPTarget{URL: "http://127.0.0.1:1/e", Method: "POST", Mode: tt.mode, IDHeader: "Idempotency-Key", Secret: "whsec_c2VjcmV0", Headers: map[string]string{"X-Tenant": "acme"}}
			req, err := Request(h, ev, now)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(req.Body)
			if string(body) != tt.body {
				t.Errorf("body = %s\nwant %s", body, tt.body)
			}
			for k, v := range tt.headers {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tt.mode == scenario.ModeStandardWebhooks {
				m := hmac.New(sha256.New, []byte("secret"))
				m.Write([]byte("evt-1.1700000000." + tt.body))
				want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
				if got := req.Header.Get("webhook-signature"); got != want {
					t.Errorf("signature = %q, want %q", got, want)
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for status, want := range map[int]Kind{200: Acked, 201: Acked, 204: Acked, 409: Conflict, 422: Conflict, 400: Rejected, 404: Rejected, 500: Unacked, 503: Unacked, 302: Unacked, 429: Unacked} {
		if got := Classify(status); got != want {
			t.Errorf("Classify(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"1", time.Second},
		{" 2 ", 2 * time.Second},
		{"3600", MaxRetryAfter},
		{"99999999999999999999", MaxRetryAfter},
		{"Sun, 01 Mar 2026 12:00:02 GMT", 2 * time.Second},
		{"Sun, 01 Mar 2026 11:59:00 GMT", 0},
		{"Sun, 01 Mar 2026 13:00:00 GMT", MaxRetryAfter},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.header, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.header, got, tt.want)
		}
	}
}

// TestRetryAfterOfAnAnswer: a 429 or a 5xx with Retry-After is unacked and
// carries the wait; a 2xx carries none.
func TestRetryAfterOfAnAnswer(t *testing.T) {
	var status atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	d := newHTTPDeliverer(&scenario.HTTPTarget{URL: srv.URL, Method: "POST", Mode: scenario.ModeStructured, Timeout: 5 * time.Second})
	ev := EventOf([]byte(`{"id":"e1","data":{}}`))
	for _, tt := range []struct {
		status int
		kind   Kind
		wait   time.Duration
	}{{429, Unacked, time.Second}, {503, Unacked, time.Second}, {200, Acked, 0}} {
		status.Store(int64(tt.status))
		a := d.Deliver(context.Background(), ev, nil)
		if a.Kind != tt.kind || a.RetryAfter != tt.wait {
			t.Errorf("%d with Retry-After: 1 = %s, wait %s; want %s, wait %s", tt.status, a.Kind, a.RetryAfter, tt.kind, tt.wait)
		}
	}
}

func TestSweepDelays(t *testing.T) {
	got := SweepDelays(10 * time.Millisecond)
	want := []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("SweepDelays = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("SweepDelays = %v, want %v", got, want)
		}
	}
}

// TestListening: a reset from a consumer that still accepts connections
// is only a reset; one whose address refuses them is a consumer dying,
// whose exit is worth waiting for.
func TestListening(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	s := &Session{t: &scenario.Target{HTTP: &scenario.HTTPTarget{URL: srv.URL + "/events"}}}
	if !s.listening() {
		t.Error("listening() = false while the consumer listens")
	}
	srv.Close()
	if s.listening() {
		t.Error("listening() = true after the consumer closed its socket")
	}
}

// TestEventOfABrokerRecord: a record of a broker capture (kcat -J, a NATS
// dump, a kafka:// topic or nats:// stream) delivers the CloudEvent it
// carries in the binary binding, as the capture file of the same events
// would: its attributes from the ce-* or ce_* headers, and none of the
// binding's or the broker's headers on the request.
func TestEventOfABrokerRecord(t *testing.T) {
	tests := []struct {
		name, envelope        string
		id, source, typ, subj string
		headers               map[string]string
	}{
		{"nats stream", `{"subject":"orders.paid","headers":{"Content-Type":"application/json","Nats-Msg-Id":"x1#1","ce-id":"evt-1","ce-source":"/orders","ce-specversion":"1.0","ce-type":"order.paid","X-Tenant":"acme"},"stream":"ORDERS","seq":1,"data":{"orderId":"O-1"},"id":"/orders/evt-1"}`,
			"evt-1", "/orders", "order.paid", "", map[string]string{"X-Tenant": "acme"}},
		{"kcat", `{"topic":"orders","partition":0,"offset":3,"key":"O-1","headers":{"ce_id":"a/b","ce_source":"shop","ce_specversion":"1.0","ce_type":"order.paid","ce_subject":"O-1"},"data":{"orderId":"O-1"},"id":"shop/a%2Fb"}`,
			"a/b", "shop", "order.paid", "O-1", nil},
		{"an id --id chose", `{"topic":"orders","headers":{"ce_id":"evt-9","ce_specversion":"1.0","Order-Id":"O-9"},"data":{},"id":"O-9"}`,
			"O-9", DefaultSource, DefaultType, "", map[string]string{"Order-Id": "O-9"}},
		{"no binding", `{"id":"evt-1","source":"shop","headers":{"ce-id":"other","traceparent":"t"},"data":{}}`,
			"evt-1", "shop", DefaultType, "", map[string]string{"ce-id": "other", "traceparent": "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := EventOf([]byte(tt.envelope))
			if ev.ID != tt.id || ev.Source != tt.source || ev.Type != tt.typ || ev.Subject != tt.subj {
				t.Errorf("id %q source %q type %q subject %q, want %q %q %q %q", ev.ID, ev.Source, ev.Type, ev.Subject, tt.id, tt.source, tt.typ, tt.subj)
			}
			if len(ev.Headers) != len(tt.headers) {
				t.Errorf("headers %v, want %v", ev.Headers, tt.headers)
			}
			for k, v := range tt.headers {
				if ev.Headers[k] != v {
					t.Errorf("headers %v, want %v", ev.Headers, tt.headers)
				}
			}
			if string(ev.Data) == "" {
				t.Error("the data was lost")
			}
		})
	}
}
