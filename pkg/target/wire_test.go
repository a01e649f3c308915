package target

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
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
	for status, want := range map[int]Kind{200: Acked, 201: Acked, 204: Acked, 409: Conflict, 422: Conflict, 400: Rejected, 404: Rejected, 500: Unacked, 503: Unacked, 302: Unacked} {
		if got := Classify(status); got != want {
			t.Errorf("Classify(%d) = %s, want %s", status, got, want)
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
