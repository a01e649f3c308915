package invariant

import (
	"fmt"
	"strings"
	"testing"
)

// TestEveryExternalInvariantIsJudged: an invariant has an Externals rule
// exactly when it has a judgeCalls, and a place in externalJudged.
func TestEveryExternalInvariantIsJudged(t *testing.T) {
	placed := map[*Invariant]int{}
	for _, inv := range externalJudged {
		placed[inv]++
	}
	for _, inv := range All {
		_, rule := inv.rules[Externals]
		if rule != (inv.judgeCalls != nil) || rule != (placed[inv] == 1) {
			t.Errorf("%s: Externals rule %v, judgeCalls %v, in externalJudged %d times", inv.Name, rule, inv.judgeCalls != nil, placed[inv])
		}
	}
}

func TestJudgeCalls(t *testing.T) {
	charge := func(seq int, by, key, idem string, performed bool) Call {
		return Call{External: "payments", Seq: seq, What: "POST /v1/charges", Delivery: by, Key: key, IdemKey: idem, Keyed: true, Header: "Idempotency-Key", Performed: performed}
	}
	mail := func(seq int, by, key string) Call {
		return Call{External: "mail", Seq: seq, What: "mail", Delivery: by, Key: key, Performed: true}
	}
	tests := []struct {
		name     string
		calls    []Call
		acked    []Acked
		required []string
		want     []string
	}{
		{"a retry replayed from its key", []Call{charge(1, "evt-1", "O-1", "payment-O-1", true), charge(2, "evt-1", "O-1", "payment-O-1", false)}, []Acked{{"evt-1", ""}}, []string{"payments"}, nil},
		{"charged twice under fresh keys",
			[]Call{charge(1, "evt-1", "O-1", "k-1", true), charge(2, "evt-1", "O-1", "k-2", true)}, []Acked{{"evt-1", ""}}, nil,
			[]string{
				"external-duplicate evt-1: payments performed 2 effects for key O-1: call 1 (POST /v1/charges, by evt-1), call 2 (POST /v1/charges, by evt-1)",
				`unstable-idempotency-key evt-1: key O-1 was asked of payments under 2 idempotency keys: "k-1", "k-2" (call 1 (POST /v1/charges, by evt-1), call 2 (POST /v1/charges, by evt-1))`,
			}},
		{"charged without a key",
			[]Call{charge(1, "evt-1", "O-1", "", true), charge(2, "evt-1", "O-1", "", true)}, []Acked{{"evt-1", ""}}, nil,
			[]string{
				"external-duplicate evt-1: payments performed 2 effects for key O-1: call 1 (POST /v1/charges, by evt-1), call 2 (POST /v1/charges, by evt-1)",
				"unkeyed-external-call evt-1: call 1 (POST /v1/charges, by evt-1), call 2 (POST /v1/charges, by evt-1) to payments carried no Idempotency-Key header (key O-1)",
			}},
		{"the same mail twice", []Call{mail(1, "evt-1", "a@x|Paid"), mail(2, "evt-2", "a@x|Paid"), mail(3, "evt-3", "b@x|Paid")}, []Acked{{"evt-1", ""}, {"evt-2", ""}, {"evt-3", ""}}, []string{"mail"},
			[]string{"external-duplicate evt-2: mail performed 2 effects for key a@x|Paid: call 1 (mail, by evt-1), call 2 (mail, by evt-2)"}},
		{"acked, never charged", []Call{charge(1, "evt-1", "O-1", "p-1", true)}, []Acked{{"evt-2", ""}, {"evt-1", ""}}, []string{"payments"},
			[]string{"external-lost evt-2: event evt-2 was acked, and payments received no call for it"}},
		{"acked, refused by the provider", []Call{charge(1, "evt-9", "O-9", "p-9", false)}, []Acked{{"evt-9", ""}}, []string{"payments"},
			[]string{"external-lost evt-9: event evt-9 was acked, and payments performed nothing for it (call 1 (POST /v1/charges, by evt-9))"}},
		{"not required: not lost", nil, []Acked{{"evt-1", ""}}, nil, nil},
		{"no key: not judged", []Call{mail(1, "evt-1", ""), mail(2, "evt-1", "")}, nil, nil, nil},
		{"a key that breaks the line is escaped", []Call{mail(1, "evt-1", "a\nb"), mail(2, "evt-1", "a\nb")}, nil, nil,
			[]string{`external-duplicate evt-1: mail performed 2 effects for key "a\nb": call 1 (mail, by evt-1), call 2 (mail, by evt-1)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range JudgeCalls(tt.calls, tt.acked, tt.required) {
				got = append(got, string(v.Invariant)+" "+v.EventID+": "+v.Detail)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestJudgeCallsNameTheirCalls: a breach of an external effect made
// names the calls it is about by their number at the external, and the
// one that made it a breach; external-lost, an effect not made, names
// none.
func TestJudgeCallsNameTheirCalls(t *testing.T) {
	charge := func(seq int, by, idem string, performed bool) Call {
		return Call{External: "payments", Seq: seq, What: "POST /v1/charges", Delivery: by, Key: "O-1", IdemKey: idem, Keyed: true, Header: "Idempotency-Key", Performed: performed}
	}
	tests := []struct {
		name  string
		calls []Call
		acked []Acked
		want  []string
	}{
		{"charged twice under fresh keys, once replayed", []Call{charge(1, "evt-1", "k-1", true), charge(2, "evt-1", "k-1", false), charge(3, "evt-2", "k-2", true)}, nil,
			[]string{"external-duplicate evt-2: calls [1 3], by 3", "unstable-idempotency-key evt-2: calls [1 3], by 3"}},
		{"charged without a key", []Call{charge(1, "evt-1", "", true), charge(2, "evt-1", "", true)}, nil,
			[]string{"external-duplicate evt-1: calls [1 2], by 2", "unkeyed-external-call evt-1: calls [1 2], by 1"}},
		{"refused, then lost", []Call{charge(4, "evt-1", "k-1", false)}, []Acked{{"evt-1", ""}},
			[]string{"external-lost evt-1: calls [], by 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, v := range JudgeCalls(tt.calls, tt.acked, []string{"payments"}) {
				got = append(got, fmt.Sprintf("%s %s: calls %v, by %d", v.Invariant, v.EventID, v.Calls, v.Call))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
