package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// dying is a store whose server goes away after a number of transactions,
// as a PostgreSQL backend does when it is terminated.
type dying struct {
	builtin.Store
	left int
}

func (d *dying) Begin(ctx context.Context) (handler.Tx, error) {
	if d.left == 0 {
		return nil, errors.New("terminating connection due to administrator command")
	}
	d.left--
	return d.Store.Begin(ctx)
}

// TestIncompleteCountsOnlyWhatDidNotComplete: when the store dies in the
// middle of a repeated delivery, the deliveries that completed before it
// are not listed as not completed.
func TestIncompleteCountsOnlyWhatDidNotComplete(t *testing.T) {
	s, err := scenario.Load("s.yaml", []byte(`version: 1
checks:
  - name: many
    steps:
      - deliver: {id: a, data: {}}
        times: 10
      - deliver: {id: b, data: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = builtin.RunFile(context.Background(), s, func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		st, err := memory(ctx, s)
		return &dying{Store: st, left: 4}, err
	})
	if err == nil {
		t.Fatal("the run passed on a store that died")
	}
	if msg := err.Error(); !strings.Contains(msg, "7 deliveries, from the one that failed on, did not complete: a ×6 (s.yaml:5:9), b (s.yaml:7:9)") {
		t.Errorf("error %q; want the 6 deliveries of a that did not complete and b", msg)
	}
}
