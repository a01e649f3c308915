package external

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlproxy"
	"github.com/redeliver/redeliver/pkg/standin"
	"github.com/redeliver/redeliver/pkg/template"
)

// raceStandin starts an HTTP stand-in named payments for a Session of
// its own.
func raceStandin(t *testing.T) (*Session, *standin.HTTP) {
	t.Helper()
	h, err := standin.StartHTTP("payments", standin.HTTPConfig{IdempotencyHeader: "Idempotency-Key", Status: 201}, template.MustParse("{body.orderId}"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	spec := &scenario.External{Name: "payments", HTTP: &scenario.ExternalHTTP{IdempotencyHeader: "Idempotency-Key"}}
	return &Session{stands: []*stand{{spec: spec, rec: h, http: h, addr: h.URL()}}}, h
}

func post(t *testing.T, base, path, key string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(`{"orderId":"O-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", path, err)
		return
	}
	resp.Body.Close()
}

// TestRaceCallBoundaries: a race's boundaries at calls are the first,
// second, … call to each method and path to arrive, before and after
// each, in the order the first of each came; calls of another delivery
// and those before the race are not the race's.
func TestRaceCallBoundaries(t *testing.T) {
	s, h := raceStandin(t)
	h.SetDelivery("evt-0")
	post(t, h.URL(), "/v1/charges", "k0") // an earlier delivery's
	before := s.callCount()
	h.SetDelivery("evt-1")
	post(t, h.URL(), "/v1/charges", "k1")
	post(t, h.URL(), "/v1/refunds", "r1")
	post(t, h.URL(), "/v1/charges", "k1")
	h.SetDelivery("")
	post(t, h.URL(), "/v1/charges", "k9") // no delivery's
	var got []string
	for _, b := range s.raceCallBoundaries("evt-1", before) {
		got = append(got, b.Name)
		if b.Call == "" || b.Lane < 1 {
			t.Errorf("%q: call %q, lane %d", b.Name, b.Call, b.Lane)
		}
	}
	want := []string{
		"the first POST /v1/charges at payments held before it was performed while the others ran",
		"the first POST /v1/charges at payments held after it was performed, its answer withheld, while the others ran",
		"the second POST /v1/charges at payments held before it was performed while the others ran",
		"the second POST /v1/charges at payments held after it was performed, its answer withheld, while the others ran",
		"the first POST /v1/refunds at payments held before it was performed while the others ran",
		"the first POST /v1/refunds at payments held after it was performed, its answer withheld, while the others ran",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("boundaries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRaceTraceMarksTheHeldCall: the call a race's schedule held is
// marked held and let go, on the held worker's lane; with statements on
// two connections, the calls are on no connection (which worker made
// them is not known); with none, on the first.
func TestRaceTraceMarksTheHeldCall(t *testing.T) {
	tests := []struct {
		name       string
		stmts      []consumer.Statement
		wantWorker int
	}{
		{"two connections", []consumer.Statement{{Worker: 1, Text: "SELECT 1", Answer: "SELECT 1"}, {Worker: 2, Text: "SELECT 1", Answer: "SELECT 1"}}, 0},
		{"no statement seen", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, h := raceStandin(t)
			h.SetDelivery("evt-1")
			ch := s.holdCall("POST", "/v1/charges", 2, true)
			post(t, h.URL(), "/v1/charges", "k1")
			done := make(chan struct{})
			go func() { post(t, h.URL(), "/v1/charges", "k2"); close(done) }()
			var held *standin.Hold
			select {
			case held = <-ch.held:
			case <-time.After(5 * time.Second):
				t.Fatal("the second call was not held")
			}
			ch.stop()
			<-done
			trace := make([]sqlproxy.Statement, len(tt.stmts))
			out := s.raceTrace(tt.stmts, trace, "evt-1", nil, held, true, 2)
			if len(out) != len(tt.stmts)+2 {
				t.Fatalf("%d lines, want %d: %+v", len(out), len(tt.stmts)+2, out)
			}
			calls := out[len(tt.stmts):]
			for i, c := range calls {
				if c.External != "payments" || c.Worker != tt.wantWorker {
					t.Errorf("call %d: external %q on worker %d, want payments on %d", i+1, c.External, c.Worker, tt.wantWorker)
				}
			}
			if calls[0].Held {
				t.Errorf("the first call is marked held: %+v", calls[0])
			}
			if c := calls[1]; !c.Held || c.Before || !c.Released || c.Lane != 2 || c.Text != "POST /v1/charges Idempotency-Key: k2" {
				t.Errorf("the held call: %+v", c)
			}
		})
	}
}

// TestCallHeldWords: the hold on a worker's bar names the call and its
// place among the workers' calls.
func TestCallHeldWords(t *testing.T) {
	for _, tt := range []struct {
		b    runner.Boundary
		want string
	}{
		{runner.Boundary{Lane: 1, Call: "POST /v1/charges"}, "before the first POST /v1/charges"},
		{runner.Boundary{Lane: 2, Call: "POST /v1/charges", After: true}, "after the second POST /v1/charges"},
		{runner.Boundary{Lane: 11, Call: "PUT /x"}, "before the 11th PUT /x"},
		{runner.Boundary{Lane: 22, Call: "PUT /x"}, "before the 22nd PUT /x"},
		{runner.Boundary{Lane: 103, Call: "PUT /x"}, "before the 103rd PUT /x"},
		{runner.Boundary{Lane: 4, Call: "PUT /x"}, "before the 4th PUT /x"},
	} {
		if got := callHeldWords(tt.b); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.b, got, tt.want)
		}
	}
}
