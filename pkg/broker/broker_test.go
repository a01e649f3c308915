package broker

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRoute(t *testing.T) {
	m := Message{ID: "e1", Source: "/s", Type: "created", Subject: "O-1", Data: []byte(`{"orderId":"O-9","n":{"a":1}}`)}
	for _, c := range []struct {
		tmpl, want, pattern string
		m                   Message
	}{
		{"orders", "orders", "orders", m},
		{"orders.{type}", "orders.created", "orders.>", m},
		{"pay.{data.orderId}.{subject}", "pay.O-9.O-1", "pay.*.>", m},
		{"pay.{data.orderId}.x", "pay.O-9.x", "pay.*.x", m},
		{"raw.{data.n}", `raw.{"a":1}`, "raw.>", m},
		{"x.{id}", "given.route", "x.>", Message{ID: "e1", Route: "given.route"}},
	} {
		r, err := ParseRoute(c.tmpl)
		if err != nil {
			t.Fatalf("%s: %v", c.tmpl, err)
		}
		if got := r.For(c.m); got != c.want {
			t.Errorf("%s: For = %q, want %q", c.tmpl, got, c.want)
		}
		if got := r.Pattern("*", ">"); got != c.pattern {
			t.Errorf("%s: Pattern = %q, want %q", c.tmpl, got, c.pattern)
		}
	}
	if _, err := ParseRoute("orders.{type"); err == nil {
		t.Error("an unclosed placeholder parsed")
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Binary, "binary": Binary, "structured": Structured} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("raw"); err == nil {
		t.Error("ParseMode(raw) did not fail")
	}
}

func TestCountsString(t *testing.T) {
	for _, c := range []struct {
		c    Counts
		want string
	}{
		{Counts{Published: 3, Acked: 1, Pending: 1, Unacked: 1, Redelivered: 2, Dropped: 1}, "3 published, 1 dropped by the duplicate window, 1 acked, 1 still pending, 1 awaiting an ack, 2 redelivered by the broker"},
		{Counts{Published: 2, Unconfirmed: 1, Acked: Unknown, Pending: 2, Unacked: Unknown, Redelivered: Unknown}, "2 published, 1 unconfirmed, 2 still pending"},
	} {
		if got := c.c.String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

func TestWaitDrained(t *testing.T) {
	// A broker whose queue empties, fills again (a killed instance's
	// messages coming back), then empties for good.
	seq := []int64{2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	i := 0
	counts := func(context.Context) (Counts, error) {
		c := Counts{Pending: seq[min(i, len(seq)-1)]}
		i++
		return c, nil
	}
	drained := func(c Counts) bool { return c.Pending == 0 }
	late := func(c Counts, d time.Duration) *Error { return &Error{Msg: "late", Counts: c} }
	c, err := WaitDrained(context.Background(), DrainOptions{Poll: time.Microsecond, Settle: time.Nanosecond, Timeout: time.Hour}, counts, drained, late)
	if err != nil || c.Pending != 0 || i != 5 {
		t.Fatalf("settle of 1ns: %+v, %v after %d looks; want drained at the fifth (two empty looks in a row)", c, err, i)
	}
	// Never drained: the late error, with the last counts.
	_, err = WaitDrained(context.Background(), DrainOptions{Poll: time.Microsecond, Timeout: time.Millisecond},
		func(context.Context) (Counts, error) { return Counts{Pending: 5}, nil }, drained, late)
	var be *Error
	if !errors.As(err, &be) || be.Counts.Pending != 5 {
		t.Fatalf("got %v, want the late error with 5 pending", err)
	}
	// Cancelled: the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = WaitDrained(ctx, DrainOptions{Poll: time.Hour, Timeout: time.Hour},
		func(context.Context) (Counts, error) { return Counts{Pending: 5}, nil }, drained, late)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
