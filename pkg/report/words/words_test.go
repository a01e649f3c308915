package words

import (
	"errors"
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"step of the check", Step(0, 1, 1), "the check"},
		{"step of a repeated delivery", Step(3, 2, 5), "step 3 (delivery 2 of 5)"},
		{"one", Count(1, "row"), "1 row"},
		{"many", Count(2, "row"), "2 rows"},
		{"sh takes es", Count(2, "crash"), "2 crashes"},
		{"consonant y takes ies", Count(3, "delivery"), "3 deliveries"},
		{"none takes the plural", Count(0, "delivery"), "0 deliveries"},
		{"vowel y takes s", Count(2, "key"), "2 keys"},
		{"one delivery", Count(1, "delivery"), "1 delivery"},
		{"none listed", List(nil), "none"},
		{"event with its consumer", Event("evt-1", "email"), "evt-1 (consumer email)"},
		{"outcome", Outcome("step 1", "duplicate", "processed", "processed").Message, "step 1 expected duplicate, got processed"},
		{"no error", Error("step 2", "boom", nil).Message, `step 2 expected an error containing "boom", got no error`},
		{"another error", Error("step 2", "boom", errors.New("bang")).Got, "bang"},
		{"rows", Rows("the check", 1, "shipments", 2).Message, "the check expected 1 row in shipments, got 2"},
		{"not marked", Marked("step 1", "evt-1", true).Got, "not marked"},
		{"violations", Violations([]string{"duplicate-effect"}, nil).Message, "expected exactly the violations duplicate-effect, got none"},
		{"summary", Summary(3, []Tally{{N: 1, Word: "processed"}, {N: 2, Word: "duplicate", Plural: true}, {N: 0, Word: "conflict", Plural: true}}, "", nil), "3 deliveries: 1 processed, 2 duplicates"},
		{"summary of one delivery with the rest and a catch", Summary(1, []Tally{{N: 1, Word: "acked"}}, "1 effect row", []string{"lost-effect"}), "1 delivery: 1 acked; 1 effect row; caught lost-effect"},
		{"summary without deliveries", Summary(0, nil, "0 effect rows", nil), "state as expected"},
		{"a tally said whole", Summary(2, []Tally{{N: 1, Word: "acked"}, {N: 1, Said: Crashes(0, 1, 0)}}, "", nil), "2 deliveries: 1 acked, 1 crash after the answer"},
		{"crashes all before the answer", Crashes(3, 0, 0), "3 crashes before the answer"},
		{"a crash after the answer", Crashes(0, 1, 0), "1 crash after the answer"},
		{"crashes before and after", Crashes(4, 1, 0), "5 crashes (4 before the answer, 1 after)"},
		{"crashes not placed", Crashes(0, 0, 2), "2 crashes, not known whether before the consumer's ack"},
		{"crashes after and not placed", Crashes(0, 1, 2), "3 crashes (1 after the answer, 2 not known whether before the consumer's ack)"},
		{"no crash", Crashes(0, 0, 0), ""},
		{"one crash interrupted nothing", NotInterrupted(1), "the crash came after the answer: it interrupted no delivery"},
		{"crashes interrupted nothing", NotInterrupted(3), "all 3 crashes came after the answer: none interrupted a delivery"},
		{"unforced", Hold("", false), "unforced"},
		{"held in order", Hold("after-check", true), "held at after-check, released in order"},
		{"repeated and passed", Repeated("8 deliveries", 3, 0, 0, nil), "8 deliveries (3 runs: 3 passed, invariants broken: none)"},
		{"repeated and failed", Repeated("step 1 expected x", 3, 2, 1, []string{"duplicate-effect in 2"}), "failed in 2 of 3 runs (invariants broken: duplicate-effect in 2); first in run 1: step 1 expected x"},
		{"explored and passed", Explored("4 deliveries", 11, 0, 0, "", nil), "4 deliveries (11 schedules)"},
		{"explored and caught", Explored("4 deliveries", 11, 0, 0, "", []string{"duplicate-effect in 2"}), "4 deliveries (11 schedules, caught duplicate-effect in 2)"},
		{"explored and failed", Explored("invariant x broken", 11, 2, 4, "held at after-check, released together", nil), "failed in 2 of 11 schedules; first in schedule 4 (held at after-check, released together): invariant x broken"},
		{"held back, one restart", HeldBack(5, 1, 0, 5*time.Second), "the instances, stopped once the queue stood empty, still held 5 messages unacknowledged; started again once to take them"},
		{"held back, restarts", HeldBack(1, 2, 0, 5*time.Second), "the instances, stopped once the queue stood empty, still held 1 message unacknowledged; started again 2 times to take them"},
		{"held back, an instance killed at a stop", HeldBack(2, 1, 1, 5*time.Second), "the instances, stopped once the queue stood empty, still held 2 messages unacknowledged; started again once to take them; an instance did not end within 5s of its SIGTERM, and the stop ended it with SIGKILL"},
		{"nothing held, instances killed at stops", HeldBack(0, 0, 3, 5*time.Second), "the instances, stopped once the queue stood empty, held nothing unacknowledged; 3 times an instance did not end within 5s of its SIGTERM, and the stop ended it with SIGKILL"},
		{"in no schedule", InNoSchedule("expected exactly the violations duplicate-effect, got none", 11), "expected exactly the violations duplicate-effect, got none (in 11 schedules)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}
