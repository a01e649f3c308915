package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// turns bounds how many of the package's tests run at once, in place of
// go test's -parallel (TestMain sets that past the package's test
// count and gives turns its value), and hands the turns out longest
// first. go test starts parallel tests in no order of their length (in
// practice the last declared first): with six at a time the package's
// longest tests, a minute each, waiting on brokers and consumers, were
// the last to start, and ended a minute after everything else.
//
// Every parallel test and subtest takes its turn at its top, with
// defer parallel(t)() or, one of the longest, defer parallelFirst(t)();
// TestEveryParallelTestTakesATurn holds to it. The turn is given back
// when the body returns: a test's parallel subtests then take turns of
// their own. A test waits for a broker or MySQL slot inside its turn.
var turns = &turnQueue{}

type turnQueue struct {
	mu    sync.Mutex
	size  int // set by TestMain
	busy  int
	open  bool // the first asks have had time to arrive
	first []chan struct{}
	rest  []chan struct{}
}

// arrival is how long the queue waits, after the first ask, before it
// hands out a turn: go test releases every top-level parallel test at
// once, and each of the longest should be in the queue before the
// first turns go.
const arrival = 200 * time.Millisecond

func (q *turnQueue) take(first bool) {
	q.mu.Lock()
	if q.open && q.busy < q.size {
		q.busy++
		q.mu.Unlock()
		return
	}
	c := make(chan struct{})
	if first {
		q.first = append(q.first, c)
	} else {
		q.rest = append(q.rest, c)
	}
	if !q.open && len(q.first)+len(q.rest) == 1 {
		time.AfterFunc(arrival, q.openUp)
	}
	q.mu.Unlock()
	<-c
}

func (q *turnQueue) openUp() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.open = true
	for q.busy < q.size && q.next() {
	}
}

// next hands the turn to the first waiting test, longest first, and
// says whether there was one; called with q.mu held.
func (q *turnQueue) next() bool {
	var c chan struct{}
	switch {
	case len(q.first) > 0:
		c, q.first = q.first[0], q.first[1:]
	case len(q.rest) > 0:
		c, q.rest = q.rest[0], q.rest[1:]
	default:
		return false
	}
	q.busy++
	close(c)
	return true
}

func (q *turnQueue) give() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy--
	q.next()
}

// parallel is t.Parallel, then a turn; call it as defer parallel(t)().
// A subtest has its turn before the top-level tests still waiting: a
// test under way ends before another starts.
func parallel(t *testing.T) (give func()) {
	t.Helper()
	return turn(t, strings.Contains(t.Name(), "/"))
}

// parallelFirst is parallel for one of the package's longest tests
// (about a minute on a quiet 2-core machine), or for the parent of such
// subtests: it has its turn before any top-level test still waiting.
func parallelFirst(t *testing.T) (give func()) {
	t.Helper()
	return turn(t, true)
}

func turn(t *testing.T, first bool) (give func()) {
	t.Parallel()
	turns.take(first)
	return turns.give
}

// parallelInHeavy is parallel for a case of a test that waits for a
// broker or MySQL slot, in the heavy tier only; in make test its cases
// run one after another inside the test's turn. go test starts a
// parallel subtest only once its parent's body has returned, behind
// every test still waiting: the broker cases asked for their broker
// slots in the package's last minute, and ran there four at a time,
// while those slots had stood idle for a minute before.
func parallelInHeavy(t *testing.T) (give func()) {
	t.Helper()
	if heavy() {
		return parallel(t)
	}
	return func() {}
}

// TestEveryParallelTestTakesATurn: no test of the package calls
// t.Parallel itself: go test's -parallel no longer bounds them, turns
// does.
func TestEveryParallelTestTakesATurn(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	bare := regexp.MustCompile(`(?m)^.*\bt\.Parallel\(\).*$`)
	for _, f := range files {
		if f == "turns_test.go" { // turn's own call
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bare.FindAllString(string(b), -1) {
			t.Errorf("%s: %q: call defer parallel(t)() (turns_test.go), not t.Parallel", f, line)
		}
	}
}

// TestTurnsLongestFirst: with every turn taken, the waiting tests have
// theirs as turns are given back, the longest first, each kind in the
// order it asked; a turn given back with none waiting is free again.
func TestTurnsLongestFirst(t *testing.T) {
	q := &turnQueue{size: 1, busy: 1, open: true}
	got := make(chan string, 4)
	for _, w := range []struct {
		name  string
		first bool
	}{{"short-1", false}, {"long-1", true}, {"short-2", false}, {"long-2", true}} {
		q.mu.Lock()
		asked := len(q.first) + len(q.rest)
		q.mu.Unlock()
		go func() { q.take(w.first); got <- w.name }()
		for waiting := asked; waiting == asked; {
			time.Sleep(time.Millisecond)
			q.mu.Lock()
			waiting = len(q.first) + len(q.rest)
			q.mu.Unlock()
		}
	}
	var order []string
	for range 4 {
		q.give()
		select {
		case name := <-got:
			order = append(order, name)
		case <-time.After(5 * time.Second):
			t.Fatalf("a turn given back reached no one waiting; so far %v", order)
		}
	}
	if want := "long-1 long-2 short-1 short-2"; strings.Join(order, " ") != want {
		t.Errorf("turns went to %v, want %s", order, want)
	}
	q.give()
	if q.busy != 0 {
		t.Errorf("a turn given back with none waiting: %d busy, want 0", q.busy)
	}
}
