package scenario

import (
	"github.com/redeliver/redeliver/pkg/problem"
)

// Error is one mistake in a scenario file, at a place: a problem of kind
// invalid input.
type Error = problem.Error

// Errors is every mistake found in one or more files, in file order.
type Errors = problem.Errors

func errorf(p Pos, format string, args ...any) *Error {
	return problem.Invalid(p, format, args...)
}
