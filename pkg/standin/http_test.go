package standin

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/template"
	"github.com/tidwall/gjson"
)

// req is one request a test sends, and what it expects back.
type req struct {
	method   string // default POST
	path     string // default /v1/charges
	key      string // the Idempotency-Key header ("" none)
	ctype    string // default application/json
	body     string
	status   int    // expected; 0: the client gets an error (no answer)
	answer   string // expected response body ("" not checked)
	replayed bool   // expected Idempotent-Replayed: true
}

// reply is what a client got.
type reply struct {
	status   int
	body     string
	replayed bool
	err      error
}

func send(t *testing.T, base string, r req) reply {
	t.Helper()
	method, path, ctype := r.method, r.path, r.ctype
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = "/v1/charges"
	}
	if ctype == "" {
		ctype = "application/json"
	}
	hr, err := http.NewRequest(method, base+path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", ctype)
	if r.key != "" {
		hr.Header.Set("Idempotency-Key", r.key)
	}
	// No connection is reused, so the client never retries on its own.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(hr)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: string(b), replayed: resp.Header.Get("Idempotent-Replayed") == "true", err: err}
}

func check(t *testing.T, i int, r req, got reply) {
	t.Helper()
	if r.status == 0 {
		if got.err == nil {
			t.Errorf("request %d: got %d %q, want no answer", i+1, got.status, got.body)
		}
		return
	}
	if got.err != nil {
		t.Fatalf("request %d: %v", i+1, got.err)
	}
	if got.status != r.status || (r.answer != "" && got.body != r.answer) || got.replayed != r.replayed {
		t.Errorf("request %d: got %d %q replayed=%v, want %d %q replayed=%v", i+1, got.status, got.body, got.replayed, r.status, r.answer, r.replayed)
	}
}

// want is what a test expects of a recorded call.
type want struct {
	performed, replayed bool
	status              int
}

func checkCalls(t *testing.T, calls []Call, wants []want) {
	t.Helper()
	if len(calls) != len(wants) {
		t.Fatalf("got %d calls, want %d: %+v", len(calls), len(wants), calls)
	}
	for i, w := range wants {
		c := calls[i]
		if c.Seq != i+1 {
			t.Errorf("call %d: seq %d", i+1, c.Seq)
		}
		if c.Performed != w.performed || c.Replayed != w.replayed || c.Status != w.status {
			t.Errorf("call %d: performed=%v replayed=%v status=%d, want %v %v %d", i+1, c.Performed, c.Replayed, c.Status, w.performed, w.replayed, w.status)
		}
	}
}

func start(t *testing.T, cfg HTTPConfig, key string) *HTTP {
	t.Helper()
	if key == "" {
		key = "{body.orderId}"
	}
	h, err := StartHTTP("payments", cfg, template.MustParse(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func TestHTTPAnswers(t *testing.T) {
	idem := HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`}
	tests := []struct {
		name  string
		cfg   HTTPConfig
		reqs  []req
		calls []want
	}{
		{
			name: "no idempotency header configured: every request is performed",
			cfg:  HTTPConfig{Body: `{"id":"ch_{seq}"}`},
			reqs: []req{
				{key: "k1", body: `{"orderId":"o1"}`, status: 200, answer: `{"id":"ch_1"}`},
				{key: "k1", body: `{"orderId":"o1"}`, status: 200, answer: `{"id":"ch_2"}`},
			},
			calls: []want{{true, false, 200}, {true, false, 200}},
		},
		{
			name: "same key and body is replayed, JSON-equal too",
			cfg:  idem,
			reqs: []req{
				{key: "k1", body: `{"orderId":"o1","amount":5}`, status: 201, answer: `{"id":"ch_1"}`},
				{key: "k1", body: `{"orderId":"o1","amount":5}`, status: 201, answer: `{"id":"ch_1"}`, replayed: true},
				{key: "k1", body: `{ "amount": 5, "orderId": "o1" }`, status: 201, answer: `{"id":"ch_1"}`, replayed: true},
				{key: "k2", body: `{"orderId":"o1","amount":5}`, status: 201, answer: `{"id":"ch_2"}`},
			},
			calls: []want{{true, false, 201}, {false, true, 201}, {false, true, 201}, {true, false, 201}},
		},
		{
			name: "same key with another body is refused",
			cfg:  idem,
			reqs: []req{
				{key: "k1", body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_1"}`},
				{key: "k1", body: `{"orderId":"o2"}`, status: 422},
				{key: "k1", body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_1"}`, replayed: true},
			},
			calls: []want{{true, false, 201}, {false, false, 422}, {false, true, 201}},
		},
		{
			name: "without the header every request is performed",
			cfg:  idem,
			reqs: []req{
				{body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_1"}`},
				{body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_2"}`},
				{body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_3"}`},
			},
			calls: []want{{true, false, 201}, {true, false, 201}, {true, false, 201}},
		},
		{
			name: "timeout after the effect, then the retry replays the real answer",
			cfg:  HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`, FailAfterEffect: "timeout"},
			reqs: []req{
				{key: "k1", body: `{"orderId":"o1"}`, status: 0},
				{key: "k1", body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_1"}`, replayed: true},
				{key: "k2", body: `{"orderId":"o2"}`, status: 201, answer: `{"id":"ch_2"}`},
			},
			calls: []want{{true, false, 0}, {false, true, 201}, {true, false, 201}},
		},
		{
			name: "500 after the effect, twice",
			cfg:  HTTPConfig{Status: 201, Body: `{"id":"ch_{seq}"}`, FailAfterEffect: "500", FailTimes: 2},
			reqs: []req{
				{body: `{"orderId":"o1"}`, status: 500},
				{body: `{"orderId":"o1"}`, status: 500},
				{body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_3"}`},
			},
			calls: []want{{true, false, 500}, {true, false, 500}, {true, false, 201}},
		},
		{
			name: "500 after the effect with a key: the retry replays the real answer",
			cfg:  HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`, FailAfterEffect: "500"},
			reqs: []req{
				{key: "k1", body: `{"orderId":"o1"}`, status: 500},
				{key: "k1", body: `{"orderId":"o1"}`, status: 201, answer: `{"id":"ch_1"}`, replayed: true},
			},
			calls: []want{{true, false, 500}, {false, true, 201}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, tt.cfg, "")
			for i, r := range tt.reqs {
				check(t, i, r, send(t, h.URL(), r))
			}
			calls := h.Calls()
			checkCalls(t, calls, tt.calls)
			for _, c := range calls {
				if c.External != "payments" || c.Method != "POST" || c.Path != "/v1/charges" || c.Key != "o1" && c.Key != "o2" {
					t.Errorf("call %d: %s %s %s key %q", c.Seq, c.External, c.Method, c.Path, c.Key)
				}
			}
		})
	}
}

func TestHTTPAnswerRecorded(t *testing.T) {
	h := start(t, HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`, FailAfterEffect: "500"}, "")
	send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`})
	send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`})
	send(t, h.URL(), req{key: "k1", body: `{"orderId":"o2"}`})
	calls := h.Calls()
	if len(calls) != 3 {
		t.Fatalf("got %d calls", len(calls))
	}
	if calls[0].Answer != failAnswer || calls[1].Answer != `{"id":"ch_1"}` || !gjson.Valid(calls[2].Answer) || gjson.Get(calls[2].Answer, "status").Int() != 422 {
		t.Errorf("answers %q %q %q", calls[0].Answer, calls[1].Answer, calls[2].Answer)
	}
	if calls[0].IdemKey != "k1" || calls[0].Header["Idempotency-Key"][0] != "k1" || string(calls[0].Body) != `{"orderId":"o1"}` {
		t.Errorf("call 1: idem key %q header %v body %q", calls[0].IdemKey, calls[0].Header, calls[0].Body)
	}
}

func TestHTTPConflict(t *testing.T) {
	tests := []struct {
		name string
		cfg  HTTPConfig
		hold bool
	}{
		{"first held", HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`}, true},
		{"first in its latency", HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`, Latency: 700 * time.Millisecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, tt.cfg, "")
			var hd *Hold
			if tt.hold {
				hd = h.Hold("post", "/v1/charges", false)
			}
			first := make(chan reply, 1)
			go func() { first <- send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`}) }()
			if tt.hold {
				<-hd.Held()
				if c := hd.Call(); c.Seq != 1 || c.IdemKey != "k1" || c.Performed {
					t.Errorf("held call %+v", c)
				}
			} else {
				waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.seq == 1 })
			}
			check(t, 1, req{status: 409}, send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`}))
			if tt.hold {
				hd.Stop()
			}
			check(t, 0, req{status: 201, answer: `{"id":"ch_1"}`}, <-first)
			check(t, 2, req{status: 201, answer: `{"id":"ch_1"}`, replayed: true}, send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`}))
			checkCalls(t, h.Calls(), []want{{true, false, 201}, {false, false, 409}, {false, true, 201}})
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestHTTPKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		r    req
		want string
	}{
		{"JSON body", "{body.orderId}", req{body: `{"orderId":"o-7","amount":{"value":3}}`}, "o-7"},
		{"nested JSON", "{body.orderId}/{body.amount.value}", req{body: `{"orderId":"o-7","amount":{"value":3}}`}, "o-7/3"},
		{"form body", "{body.order_id}", req{ctype: "application/x-www-form-urlencoded; charset=utf-8", body: "order_id=o-9&amount=100&order_id=o-10"}, "o-9"},
		{"header", "pay-{headers.idempotency-key}", req{key: "abc", body: `{}`}, "pay-abc"},
		{"method and path and query", "{method} {path} {query.a}", req{path: "/v1/refunds?a=b", body: `x`}, "POST /v1/refunds b"},
		{"text body", "{body}", req{ctype: "text/plain", body: "hello"}, "hello"},
		{"missing path", "[{body.nothing}]", req{body: `{"orderId":"o"}`}, "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, HTTPConfig{}, tt.key)
			send(t, h.URL(), tt.r)
			calls := h.Calls()
			if len(calls) != 1 || calls[0].Key != tt.want {
				t.Fatalf("got %+v, want key %q", calls, tt.want)
			}
		})
	}
}

func TestHTTPHold(t *testing.T) {
	cfg := HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201, Body: `{"id":"ch_{seq}"}`}
	tests := []struct {
		name   string
		path   string // the hold's path
		after  bool
		cut    bool
		status int  // what the client gets (0: no answer)
		call   want // how the held call is recorded
		retry  want // how a retry with the same key is recorded
	}{
		{"before, cut", "/v1/charges", false, true, 0, want{false, false, 0}, want{true, false, 201}},
		{"after, cut", "/v1/charges", true, true, 0, want{true, false, 0}, want{false, true, 201}},
		{"before, stop", "/v1/charges", false, false, 201, want{true, false, 201}, want{false, true, 201}},
		{"after, stop", "", true, false, 201, want{true, false, 201}, want{false, true, 201}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, cfg, "")
			hd := h.Hold("POST", tt.path, tt.after)
			other := h.Hold("POST", "/elsewhere", false) // never matched
			defer other.Stop()
			got := make(chan reply, 1)
			go func() { got <- send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`}) }()
			select {
			case <-hd.Held():
			case <-time.After(5 * time.Second):
				t.Fatal("the call never reached the hold")
			}
			if c := hd.Call(); c.Performed != tt.after || c.Seq != 1 {
				t.Errorf("held call performed=%v seq %d", c.Performed, c.Seq)
			}
			// The held call's connection: the stand-in's own address at
			// one end, a loopback caller at the other.
			client, server := hd.Conn()
			if u := strings.TrimPrefix(h.URL(), "http://"); server.String() != u || !client.Addr().IsLoopback() || client.Port() == 0 || client.Port() == server.Port() {
				t.Errorf("held call's connection %v → %v, want a loopback caller → %s", client, server, u)
			}
			if n := len(h.Calls()); n != map[bool]int{false: 0, true: 1}[tt.after] {
				t.Errorf("%d calls recorded while held", n)
			}
			if tt.cut {
				hd.Cut()
				if c := h.Calls(); len(c) != 1 || c[0].Status != 0 {
					t.Errorf("after Cut: %+v", c)
				}
			} else {
				hd.Stop()
			}
			check(t, 0, req{status: tt.status}, <-got)
			send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`})
			checkCalls(t, h.Calls(), []want{tt.call, tt.retry})
			hd.Stop() // nothing after the call went on or was cut
			hd.Cut()
		})
	}
}

// TestHTTPHoldNth: a hold of the nth call lets the matching calls before
// it go by (a call elsewhere does not count), and holds the nth; a call
// with its idempotency key meanwhile is refused 409.
func TestHTTPHoldNth(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{{"first", 1}, {"second", 2}, {"third", 3}, {"zero is the first", 0}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201}, "")
			hd := h.HoldNth("POST", "/v1/charges", tt.n, false)
			defer hd.Stop()
			check(t, 0, req{path: "/elsewhere", body: `{}`, status: 201}, send(t, h.URL(), req{path: "/elsewhere", body: `{}`}))
			for i := 1; i < max(tt.n, 1); i++ {
				k := fmt.Sprintf("k%d", i)
				check(t, i, req{status: 201}, send(t, h.URL(), req{key: k, body: `{}`}))
			}
			held := max(tt.n, 1)
			got := make(chan reply, 1)
			go func() { got <- send(t, h.URL(), req{key: "held", body: `{}`}) }()
			select {
			case <-hd.Held():
			case <-time.After(5 * time.Second):
				t.Fatal("the call never reached the hold")
			}
			if c := hd.Call(); c.IdemKey != "held" || c.Seq != held+1 {
				t.Errorf("held call %d (key %q), want call %d (key held)", c.Seq, c.IdemKey, held+1)
			}
			check(t, held, req{status: 409}, send(t, h.URL(), req{key: "held", body: `{}`}))
			hd.Stop()
			check(t, held+1, req{status: 201}, <-got)
		})
	}
}

func TestHTTPDeliveryAndReset(t *testing.T) {
	h := start(t, HTTPConfig{IdempotencyHeader: "Idempotency-Key", Body: `{"n":{seq}}`, FailAfterEffect: "500"}, "")
	h.SetDelivery("d1")
	send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`})
	h.SetDelivery("d2")
	send(t, h.URL(), req{key: "k2", body: `{"orderId":"o1"}`})
	h.SetDelivery("")
	send(t, h.URL(), req{key: "k3", body: `{"orderId":"o1"}`})
	calls := h.Calls()
	if len(calls) != 3 || calls[0].Delivery != "d1" || calls[1].Delivery != "d2" || calls[2].Delivery != "" {
		t.Fatalf("deliveries: %+v", calls)
	}
	if calls[0].Status != 500 || calls[1].Answer != `{"n":2}` {
		t.Errorf("before Reset: %+v", calls)
	}
	h.Reset()
	if n := len(h.Calls()); n != 0 {
		t.Fatalf("%d calls after Reset", n)
	}
	// The key k1's stored answer, the fail count and the numbering are gone.
	check(t, 0, req{status: 500}, send(t, h.URL(), req{key: "k1", body: `{"orderId":"o1"}`}))
	check(t, 1, req{status: 200, answer: `{"n":2}`}, send(t, h.URL(), req{key: "k2", body: `{"orderId":"o1"}`}))
	checkCalls(t, h.Calls(), []want{{true, false, 500}, {true, false, 200}})
}

func TestHTTPClose(t *testing.T) {
	tests := []struct {
		name  string
		after bool
	}{{"held before", false}, {"held after", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, HTTPConfig{}, "")
			hd := h.Hold("POST", "", tt.after)
			got := make(chan reply, 1)
			go func() { got <- send(t, h.URL(), req{body: `{}`}) }()
			<-hd.Held()
			closed := make(chan error, 1)
			go func() { closed <- h.Close() }()
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close hung on a held call")
			}
			check(t, 0, req{status: 0}, <-got)
			hd.Cut() // returns: the call has ended
			if err := h.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := http.Get(h.URL()); err == nil {
				t.Error("the stand-in still answers after Close")
			}
		})
	}
}

func TestStartHTTPErrors(t *testing.T) {
	for _, cfg := range []HTTPConfig{{Status: 42}, {FailAfterEffect: "502"}, {FailTimes: -1}} {
		if h, err := StartHTTP("x", cfg, template.Template{}); err == nil {
			h.Close()
			t.Errorf("%+v: no error", cfg)
		}
	}
}

func TestHTTPEnvelope(t *testing.T) {
	tests := []struct {
		ctype, body string
		path, want  string
	}{
		{"application/json", `{"a":[1,2]}`, "body.a.1", "2"},
		{"application/x-www-form-urlencoded", "a=1&a=2&b=%20x", "body.a", "1"},
		{"application/x-www-form-urlencoded", "a=1&b=%zz", "body.a", "1"},
		{"text/plain", "not json", "body", "not json"},
		{"", "\xff\xfe", "body", "\ufffd\ufffd"},
		{"application/json", "", "body", ""},
		{"application/json", `"s"`, "body", "s"},
	}
	for _, tt := range tests {
		h := http.Header{}
		h.Set("Content-Type", tt.ctype)
		h.Set("X-Trace", "t1")
		env := httpEnvelope("PUT", "/p", url.Values{"q": {"1", "2"}}, h, []byte(tt.body))
		if !gjson.ValidBytes(env) {
			t.Fatalf("%q %q: invalid envelope %s", tt.ctype, tt.body, env)
		}
		if got := gjson.GetBytes(env, tt.path).String(); got != tt.want {
			t.Errorf("%q %q: %s = %q, want %q (%s)", tt.ctype, tt.body, tt.path, got, tt.want, env)
		}
		if m := gjson.GetBytes(env, "method").String() + gjson.GetBytes(env, "path").String() + gjson.GetBytes(env, "query.q").String() + gjson.GetBytes(env, "headers.x-trace").String(); m != "PUT/p1t1" {
			t.Errorf("envelope %s", env)
		}
	}
}

func FuzzEnvelope(f *testing.F) {
	f.Add("application/json", []byte(`{"orderId":"o1"}`))
	f.Add("application/x-www-form-urlencoded", []byte("a=1&b=%zz&c"))
	f.Add("application/x-www-form-urlencoded; charset=\"", []byte("a=1"))
	f.Add("text/plain", []byte("\xff{"))
	f.Add("", []byte(`[1, 2, {"a": null}]  `))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		h.Set("Idempotency-Key", string(body))
		env := httpEnvelope("POST", "/v1/x", url.Values{string(body): {contentType}}, h, body)
		if !gjson.ValidBytes(env) {
			t.Fatalf("invalid envelope %q", env)
		}
		if !gjson.GetBytes(env, "body").Exists() {
			t.Fatalf("no body in %q", env)
		}
	})
}
