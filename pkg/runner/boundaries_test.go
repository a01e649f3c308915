package runner_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/runner"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// manyStatements is a system whose every delivery ran 101 statements:
// 202 boundaries, over the most a step's exploration tries.
type manyStatements struct{ runner.System }

func (manyStatements) record(c runner.Call) (consumer.Result, error) {
	bs := make([]runner.Boundary, 202)
	for i := range bs {
		bs[i] = runner.Boundary{Index: i/2 + 1, After: i%2 == 1}
	}
	c.Rec.Boundaries(bs)
	return consumer.Result{}, nil
}

func (m manyStatements) Deliver(_ context.Context, c runner.Call) (consumer.Result, error) {
	return m.record(c)
}

func (m manyStatements) Concurrent(_ context.Context, c runner.Call) (consumer.Result, error) {
	return m.record(c)
}

func (manyStatements) Close() error                                     { return nil }
func (manyStatements) Advance(time.Duration)                            {}
func (manyStatements) Settle(context.Context, *consumer.Counters) error { return nil }
func (manyStatements) Count(context.Context, string) (int64, error)     { return 0, nil }
func (manyStatements) Summary(*runner.CheckResult) runner.Summary       { return runner.Summary{} }
func (manyStatements) Total(*consumer.Counters, consumer.Counters)      {}
func (manyStatements) Describe(*runner.FileResult)                      {}
func (manyStatements) Judge(context.Context, []invariant.Record, *runner.CheckResult) ([]invariant.Violation, error) {
	return nil, nil
}

// TestTooManyBoundaries: a step with more boundaries than are tried is
// refused with a way out that the step can take — a concurrent step
// cannot crash at named statements.
func TestTooManyBoundaries(t *testing.T) {
	tests := []struct {
		name, step string
		want, not  string
	}{
		{"crash: statements", "crash: statements", "name the statements to crash at with crash: {before: …} or {after: …}", ""},
		{"concurrent", "concurrent: 2", "fewer concurrent deliveries", "crash: {before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:1/e\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\", env: {D: \"${REDELIVER_DB_URL}\"}}\n" +
				"effects: {db: \"postgres://u@127.0.0.1:1/x\", table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" +
				"checks:\n  - name: big\n    steps:\n      - deliver: {id: e, data: {k: o}}\n        " + tt.step + "\n"
			s, err := scenario.Load("big.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			k := runner.Kind{Statements: true, Open: func(context.Context, *scenario.Scenario) (runner.System, error) { return manyStatements{}, nil }}
			_, err = func() (_ *runner.FileResult, err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("the run went past the boundaries' count: %v", r)
					}
				}()
				return runner.Run(context.Background(), s, k)
			}()
			if err == nil || !strings.Contains(err.Error(), "big.yaml:9:9: ") || !strings.Contains(err.Error(), "202 boundaries") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v; want one at the step, naming 202 boundaries and %q", err, tt.want)
			}
			if tt.not != "" && strings.Contains(err.Error(), tt.not) {
				t.Errorf("the error suggests %q, which such a step refuses: %v", tt.not, err)
			}
		})
	}
}
