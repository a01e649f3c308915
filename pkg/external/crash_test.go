package external

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/report"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// TestCrashTiming: a crash says whether its kill came before the
// consumer's answer (it interrupted the delivery) or after it.
func TestCrashTiming(t *testing.T) {
	execTarget := func(script string) *scenario.Target {
		return &scenario.Target{Exec: &scenario.ExecTarget{Command: []string{"sh", "-c", script}, Timeout: 5 * time.Second}}
	}
	httpTarget := func(h http.HandlerFunc) *scenario.Target {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return &scenario.Target{HTTP: &scenario.HTTPTarget{URL: srv.URL, Method: "POST", Mode: "structured", Timeout: 5 * time.Second}}
	}
	tests := []struct {
		name   string
		target *scenario.Target
		after  time.Duration
		want   Timing
		kind   Kind
		killed bool
	}{
		{"an exec process that exited before the kill", execTarget("exit 0"), 300 * time.Millisecond, AfterAnswer, Acked, false},
		{"an exec process that failed before the kill", execTarget("exit 3"), 300 * time.Millisecond, AfterAnswer, Unacked, false},
		{"an exec process killed at work", execTarget("sleep 5"), 30 * time.Millisecond, BeforeAnswer, Unacked, true},
		{"an HTTP answer before the kill", httpTarget(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }), 300 * time.Millisecond, AfterAnswer, Acked, false},
		// The consumer's own 503 came after the kill was sent, and won the
		// race: its answer stands, the kill interrupted nothing.
		{"an HTTP 5xx that raced the kill", httpTarget(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(100 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
		}), 10 * time.Millisecond, AfterAnswer, Unacked, false},
		// The connection dies with the consumer, before any status.
		{"an HTTP request cut before its status", httpTarget(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(100 * time.Millisecond)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}), 10 * time.Millisecond, BeforeAnswer, Unacked, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{t: tt.target, dl: newDeliverer(tt.target)}
			a, err := s.crash(context.Background(), Event{ID: "evt-1", Data: []byte(`{}`)}, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if a.CrashCame != tt.want || a.Kind != tt.kind || a.Killed != tt.killed {
				t.Errorf("crash = %s, %s, killed %v; want %s, %s, killed %v", a.CrashCame, a.Kind, a.Killed, tt.want, tt.kind, tt.killed)
			}
		})
	}
}

// TestCrashLines: a check's line says when the crashes came,
// and one whose crashes all came after the answer says it interrupted no
// delivery.
func TestCrashLines(t *testing.T) {
	crashes := func(before, after, unknown int) consumer.Counters {
		var c consumer.Counters
		for i := 0; i < before; i++ {
			count(&c, Answer{Kind: Unacked, Crashed: true, CrashCame: BeforeAnswer}, false, false)
		}
		for i := 0; i < after; i++ {
			count(&c, Answer{Kind: Acked, Crashed: true, CrashCame: AfterAnswer}, false, false)
		}
		for i := 0; i < unknown; i++ {
			count(&c, Answer{Kind: Acked, Crashed: true, CrashCame: Unknown}, false, true)
		}
		c.Effects = 1
		return c
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"a crash after the answer", report.CheckLine(runner.Line{Summary: summary(nil, crashes(0, 1, 0), "payments")}),
			"1 delivery: 1 crash after the answer; table payments holds 1 row"},
		{"a sweep", report.CheckLine(runner.Line{Summary: summary(nil, crashes(6, 1, 0), "payments")}),
			"7 deliveries: 7 crashes (6 before the answer, 1 after); table payments holds 1 row"},
		{"an effects query", report.CheckLine(runner.Line{Summary: summary(nil, crashes(0, 1, 0), "")}),
			"1 delivery: 1 crash after the answer; the effects query returns 1 row"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got  %q\nwant %q", tt.got, tt.want)
			}
		})
	}
}
