package broker

import (
	"context"
	"strings"
	"testing"
	"time"
)

type fakeTarget string

func (k fakeTarget) Kind() string              { return string(k) }
func (fakeTarget) DrainTimeout() time.Duration { return time.Second }

// TestAdapterOf: a target opens through the adapter its kind registered;
// a kind nobody registered names the kinds that are, and a second
// registration of a kind is refused.
func TestAdapterOf(t *testing.T) {
	Register("test-registered", Adapter{Name: "Test", AckWord: "acked",
		Open: func(context.Context, Target) (Publisher, string, error) { return nil, "test broker", nil }})
	a, err := AdapterOf(fakeTarget("test-registered"))
	if err != nil || a.Name != "Test" || a.AckWord != "acked" {
		t.Fatalf("AdapterOf(registered) = %+v, %v", a, err)
	}
	if _, desc, _ := a.Open(context.Background(), fakeTarget("test-registered")); desc != "test broker" {
		t.Errorf("Open described %q", desc)
	}
	_, err = AdapterOf(fakeTarget("test-unlinked"))
	if err == nil || !strings.Contains(err.Error(), "target test-unlinked") || !strings.Contains(err.Error(), "test-registered") {
		t.Errorf("AdapterOf(unlinked) = %v; want an error naming the kind and the linked ones", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one kind did not panic")
		}
	}()
	Register("test-registered", Adapter{})
}
