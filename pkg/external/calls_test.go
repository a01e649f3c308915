package external

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/standin"
)

// fakeCalls is a stand-in that received the calls it holds.
type fakeCalls []standin.Call

func (r fakeCalls) Calls() []standin.Call { return r }
func (fakeCalls) Reset()                  {}
func (fakeCalls) SetDelivery(string)      {}
func (fakeCalls) Close() error            { return nil }

// TestCallsSince: a check's calls are those its stand-ins received since
// its first delivery was sent, each with when it came and what it was
// answered in the words of its trace; with no delivery that fakeCalls a
// time, all of them.
func TestCallsSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	payments := fakeCalls{
		{External: "payments", Seq: 1, At: at(-5), Delivery: "evt-0", Method: "POST", Path: "/v1/charges", Key: "O-0", Performed: true, Status: 201, Answer: `{"id": "ch_1"}`},
		{External: "payments", Seq: 2, At: at(1), Delivery: "evt-1", Method: "POST", Path: "/v1/charges", Key: "O-1", Performed: true},
		{External: "payments", Seq: 3, At: at(3), Delivery: "evt-1", Method: "POST", Path: "/v1/charges", Key: "O-1", IdemKey: "k", Replayed: true, Status: 201, Answer: `{"id": "ch_2"}`},
	}
	mail := fakeCalls{{External: "mail", Seq: 1, At: at(4), Method: "SMTP", To: []string{"a@x"}, Key: "a@x|Paid", Performed: true, Status: 250}}
	s := &Session{stands: []*stand{
		{spec: &scenario.External{Name: "payments", HTTP: &scenario.ExternalHTTP{IdempotencyHeader: "Idempotency-Key"}}, rec: payments},
		{spec: &scenario.External{Name: "mail", SMTP: true}, rec: mail},
	}}
	say := func(calls []invariant.Call) string {
		var out []string
		for _, c := range calls {
			out = append(out, fmt.Sprintf("%s %d %s +%v %s, performed %v, no answer %v", c.External, c.Seq, c.What, c.At.Sub(t0), c.Answer, c.Performed, c.NoAnswer))
		}
		return strings.Join(out, "\n")
	}
	check := []invariant.Record{{Seq: 2, Span: invariant.Span{Sent: at(2), Answered: at(5)}}, {Seq: 1, Span: invariant.Span{Sent: at(0), Answered: at(1)}}}
	want := strings.Join([]string{
		"payments 2 POST /v1/charges +1ms no answer, performed true, no answer true",
		"payments 3 POST /v1/charges +3ms 201 (ch_2) replayed, performed false, no answer false",
		"mail 1 mail to a@x +4ms accepted, performed true, no answer false",
	}, "\n")
	if got := say(s.callsSince(check)); got != want {
		t.Errorf("the check's calls are\n%s\nwant\n%s", got, want)
	}
	untimed := []invariant.Record{{Seq: 1}}
	if got := s.callsSince(untimed); len(got) != 4 {
		t.Errorf("with no time fakeCalls, the check's calls are\n%s\nwant all 4", say(got))
	}
	if got := (&Session{}).callsSince(check); got != nil {
		t.Errorf("with no stand-in, the check's calls are %v", got)
	}
}
