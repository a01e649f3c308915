// Package proc owns the processes redeliver starts: a consumer under test
// (started, checked for readiness, crashed, restarted, stopped, its output
// kept) and an exec delivery's process. Each runs in a process group of its
// own, through a supervisor on Linux (redeliver run again) that ends what
// it started should redeliver itself be killed; what a process leaves
// behind once it exited is found in /proc and ended. It also tells which
// started instance holds a TCP connection, from the kernel's tables, and
// kills started instances at random or at the delivery they work on (the
// nemesis, nemesis.go and working.go).
//
// Of this module it imports only pkg/consumer (the stop's grace, which
// the reports word), pkg/escape, pkg/inject (the kills
// --kill-working draws from --seed), pkg/redact and pkg/scenario (the
// consumer's start: command, environment, ready check), and it links no
// database driver and no broker client.
package proc
