package external

import (
	"context"
	"fmt"
	"strings"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/pgproxy"
	"github.com/redeliver/redeliver/pkg/report/words"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// watched makes one delivery while the proxy follows its statements and,
// when at is given, holds the consumer's connection at that boundary and
// kills the consumer there — the started process for HTTP, the
// delivery's own for exec — then cuts the connection (the database rolls
// back what the consumer had not committed) and restarts the consumer.
// reached is false when the delivery ended without reaching at.
func (s *Session) watched(ctx context.Context, ev Event, at *pgproxy.Boundary) (a Answer, trace []pgproxy.Statement, reached bool, err error) {
	w, err := s.proxy.Watch(at)
	if err != nil {
		return Answer{}, nil, false, err
	}
	kill := make(chan struct{})
	answers := make(chan Answer, 1)
	go func() { answers <- s.dl.Deliver(ctx, ev, kill) }()
	select {
	case <-w.Held():
		reached = true
		if s.proc != nil {
			s.proc.Kill()
		}
		close(kill)
		w.Cut()
		a = <-answers
		// Held at a statement, the consumer had not answered: whatever
		// came back is the kill's doing.
		a.Killed, a.Crashed, a.CrashCame = true, true, BeforeAnswer
		if a.Kind == "" || a.Status != 0 {
			a.Kind, a.Status = Unacked, 0
		}
	case a = <-answers:
	case <-ctx.Done():
		close(kill)
		w.Cut()
		w.Stop()
		return <-answers, nil, false, ctx.Err()
	}
	trace = w.Stop()
	if reached && s.proc != nil {
		if err := s.proc.Restart(ctx); err != nil {
			return a, trace, reached, err
		}
		s.dl.Forget()
	}
	return a, trace, reached, nil
}

// boundary is where a statement crash kills: the one the file names, or,
// for crash: statements, boundary k of the recorded delivery (k odd:
// before statement (k+1)/2; k even: after statement k/2).
func boundary(c *scenario.Crash, kill int) *pgproxy.Boundary {
	if c.Kind == scenario.CrashStatement {
		return &pgproxy.Boundary{Words: c.Words, After: c.AfterStatement}
	}
	if kill == 0 {
		return nil
	}
	return &pgproxy.Boundary{Index: (kill + 1) / 2, After: kill%2 == 0}
}

// boundaryNames are the boundaries of a recorded delivery's statements,
// in order, in words.
func boundaryNames(trace []pgproxy.Statement) []string {
	var out []string
	for _, st := range trace {
		text := shortStatement(st.Text)
		out = append(out,
			fmt.Sprintf("before statement %d (%s)", st.Index, text),
			fmt.Sprintf("after statement %d (%s)", st.Index, text))
	}
	return out
}

// shortStatement is a statement on one line, cut to a length a report
// line carries.
func shortStatement(text string) string {
	s := strings.Join(strings.Fields(text), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

// statementsOf is a trace in the vocabulary the reports read, the held
// statement marked.
func statementsOf(trace []pgproxy.Statement, hit *pgproxy.Boundary) []consumer.Statement {
	out := make([]consumer.Statement, len(trace))
	held := -1
	if hit != nil {
		for i, st := range trace {
			if matches(st, hit) {
				held = i
				break
			}
		}
	}
	for i, st := range trace {
		out[i] = consumer.Statement{Worker: st.Lane, Text: st.Text, Answer: st.Answer}
		if i == held {
			out[i].Held, out[i].Before = true, !hit.After
			if !hit.After {
				out[i].Answer = ""
			}
		}
	}
	return out
}

func matches(st pgproxy.Statement, b *pgproxy.Boundary) bool {
	switch {
	case b.Words != "":
		return pgproxy.Matches(st.Text, b.Words)
	case b.Lane > 0:
		return st.Lane == b.Lane && st.LaneIndex == b.Index
	}
	return st.Index == b.Index
}

// statementCrash makes a delivery that crashes at a statement boundary:
// the one the file names, or, under crash: statements, the boundary of
// this trial (c.Hold.Kill; 0 records the delivery's boundaries instead).
func (sys *system) statementCrash(ctx context.Context, c runner.Call, ev Event, key string, tolerate bool) (Answer, error) {
	st := c.St
	at := boundary(st.Crash, c.Hold.Kill)
	var trace []pgproxy.Statement
	var reached bool
	a, err := sys.once(ctx, c, ev, key, true, func() (Answer, error) {
		var err error
		var a Answer
		a, trace, reached, err = sys.sess.watched(ctx, ev, at)
		return a, err
	})
	if err != nil {
		return a, err
	}
	switch {
	case at == nil:
		c.Rec.Boundaries(boundaryNames(trace))
		return a, nil
	case !reached:
		what := "crash: " + st.Crash.String()
		if c.Hold.Kill > 0 {
			what = "crash: statements " + c.Hold.Name
		}
		c.Rec.Trace(statementsOf(trace, nil))
		lines := make([]string, len(trace))
		for i, t := range trace {
			lines[i] = shortStatement(t.Text) + " → " + t.Answer
		}
		c.Rec.Fail(words.NotReached(what, lines, a.Short()))
		return a, nil
	}
	c.Rec.Trace(statementsOf(trace, at))
	if a.Kind != Unacked {
		return a, nil
	}
	// No ack arrived: the broker redelivers.
	return sys.plain(ctx, c, ev, key, tolerate)
}
