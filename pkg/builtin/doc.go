// Package builtin is the built-in handler as a system under test: the
// runner's System (pkg/runner) for a scenario file with a handler:, the
// file's strategy on a store its caller opens (SQLite or PostgreSQL, as
// a Store), with the payment gateway its strategy may call. It makes each
// delivery, injects the file's faults at the handler's fault points,
// holds a concurrent step's workers there to force a schedule
// (interleave.go), reads the store and judges it. It sits beside the
// user's consumer's System (pkg/external), and the runner drives both.
//
// Of this module it imports pkg/runner, pkg/scenario, pkg/handler,
// pkg/consumer and pkg/invariant; it links no store adapter, database
// driver or broker client (its caller opens the store), and no words of
// the reports: what it finds it hands the runner as facts (runner.Miss).
package builtin
