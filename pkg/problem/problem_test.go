package problem

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, ""},
		{"usage", Usagef("--format must be text"), Usage},
		{"invalid, wrapped", fmt.Errorf("load: %w", Invalid(Pos{File: "a.yaml", Line: 2, Col: 3}, "bad")), InvalidInput},
		{"list", Errors{Invalid(Pos{File: "a.yaml"}, "bad")}, InvalidInput},
		{"verdict", ErrVerdict, Verdict},
		{"interrupted wins", Environmentf(Pos{File: "a.yaml"}, fmt.Errorf("deliver: %w", context.Canceled)), Interrupted},
		{"unclassified", errors.New("boom"), Environment},
		{"no kind is never a pass", &Error{Msg: "x"}, Environment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := KindOf(tt.err); got != tt.want {
				t.Errorf("KindOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorNamesItsPlace(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{Invalid(Pos{File: "a.yaml", Line: 2, Col: 3}, "unknown field %q", "x"), `a.yaml:2:3: unknown field "x"`},
		{Invalid(Pos{File: "c.ndjson", Line: 7}, "not JSON"), "c.ndjson:7: not JSON"},
		{Environmentf(Pos{File: "a.yaml"}, errors.New("disk full")), "a.yaml: disk full"},
		{Usagef("no capture"), "no capture"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	es := Errors{Invalid(Pos{File: "b.yaml", Line: 1}, "b"), Invalid(Pos{File: "a.yaml", Line: 9}, "z"), Invalid(Pos{File: "a.yaml", Line: 2, Col: 5}, "y")}
	es.Sort()
	if got, want := es.Error(), "a.yaml:2:5: y\na.yaml:9: z\nb.yaml:1: b"; got != want {
		t.Errorf("sorted Errors = %q, want %q", got, want)
	}
	if l := List(fmt.Errorf("x: %w", context.Canceled)); len(l) != 1 || l[0].Kind != Interrupted {
		t.Errorf("List(canceled) = %v", l)
	}
}
