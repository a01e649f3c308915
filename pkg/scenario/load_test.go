package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
)

const full = `version: 1
name: full
handler:
  strategy: business-key
  consumer: billing
  effect: invoices
  key: "{data.orderId}"
  identity:
    default: [data.orderId]
    v2: [data.order.id]
  retention: 7d
checks:
  - name: first
    steps:
      - deliver:
          id: 42
          source: shop
          schema: v2
          headers: {traceparent: abc}
          data: {order: {id: o-1}, amount: 1.50, tags: [a, b], ok: true, none: null}
        times: 2
        label: one
        fail: after-effect
        expect: {outcome: failed, error: Injected}
      - advance: 25h
      - deliver: {id: "42", data: {orderId: o-1}}
        expect: {same_effect_as: one}
      - expect: {rows: {invoices: 1, processed: 1}, processed: [42, {id: "42", consumer: billing}], not_processed: [x]}
    violations: [duplicate-effect]
    say: "{deliveries} deliveries, {rows.invoices} invoices"
`

func TestLoadFull(t *testing.T) {
	s, err := Load("full.yaml", []byte(full))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	h := s.Handler
	if h.Strategy != handler.BusinessKey || h.Consumer != "billing" || h.Effect != "invoices" || h.Key.String() != "{data.orderId}" {
		t.Errorf("handler = %+v", h.Config)
	}
	if h.Retention != 7*24*time.Hour {
		t.Errorf("retention = %v, want 168h", h.Retention)
	}
	if got := strings.Join(h.Identity, ","); got != "data.orderId" {
		t.Errorf("identity = %q", got)
	}
	if got := strings.Join(h.IdentityBySchema["v2"], ","); got != "data.order.id" {
		t.Errorf("identity v2 = %q", got)
	}
	c := s.Checks[0]
	if len(c.Steps) != 4 || !c.ViolationsDeclared || c.Violations[0] != "duplicate-effect" {
		t.Fatalf("check = %+v", c)
	}
	d := c.Steps[0]
	if d.Kind != Deliver || d.Times != 2 || d.Label != "one" || d.Fail != consumer.AfterEffect || d.Expect.Outcome != consumer.Failed || d.Expect.Error != "Injected" {
		t.Errorf("deliver step = %+v", d)
	}
	if d.Pos.String() != "full.yaml:15:9" {
		t.Errorf("step position = %s, want full.yaml:15:9", d.Pos)
	}
	wantEnv := `{"data":{"order":{"id":"o-1"},"amount":1.50,"tags":["a","b"],"ok":true,"none":null},"headers":{"traceparent":"abc"},"id":"42","schema":"v2","source":"shop"}`
	if string(d.Event.Envelope) != wantEnv {
		t.Errorf("envelope =\n %s\nwant\n %s", d.Event.Envelope, wantEnv)
	}
	if d.Event.ID != "42" || d.Event.Schema != "v2" || d.Event.Source != "shop" {
		t.Errorf("event = %+v", d.Event)
	}
	if c.Steps[1].Kind != Advance || c.Steps[1].Advance != 25*time.Hour {
		t.Errorf("advance step = %+v", c.Steps[1])
	}
	st := c.Steps[3].State
	if c.Steps[3].Kind != Inspect || len(st.Rows) != 2 || len(st.Processed) != 2 || st.Processed[1].Consumer != "billing" || st.NotProcessed[0].ID != "x" {
		t.Errorf("state step = %+v", st)
	}
}

func TestNameDefaultsToFileName(t *testing.T) {
	s, err := Load("dir/my-story.yml", []byte("version: 1\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "my-story" {
		t.Errorf("name = %q, want my-story", s.Name)
	}
}

// TestLoadErrors pins the message for each kind of mistake. Every error
// names file:line:column.
func TestLoadErrors(t *testing.T) {
	head := "version: 1\nchecks:\n  - name: a\n    steps:\n"
	tests := []struct{ name, src, want string }{
		{"duplicate field", "version: 1\nversion: 1\nchecks: []\n", "f.yaml:2:1: field \"version\" appears twice in a scenario"},
		{"root not a mapping", "- a\n", "f.yaml:1:1: a scenario must be a mapping, not a list"},
		{"checks not a list", "version: 1\nchecks: {a: 1}\n", "f.yaml:2:9: checks must be a list of checks, not a mapping"},
		{"no checks", "version: 1\nchecks: []\n", "f.yaml:2:9: checks is empty; a scenario needs at least one check"},
		{"check without name", "version: 1\nchecks:\n  - steps:\n      - deliver: {id: e}\n", "f.yaml:3:5: this check has no name; add name: followed by what it shows"},
		{"two documents", head + "      - deliver: {id: e}\n---\nversion: 1\n", "f.yaml:6:1: a second YAML document starts here; a scenario file holds one document"},
		{"times zero", head + "      - deliver: {id: e}\n        times: 0\n", "f.yaml:6:16: times must be between 1 and 100000, not 0"},
		{"concurrent one", head + "      - deliver: {id: e}\n        concurrent: 1\n", "f.yaml:6:21: concurrent must be between 2 and 64, not 1"},
		{"concurrent with expect", head + "      - deliver: {id: e}\n        concurrent: 2\n        expect: processed\n", "f.yaml:7:17: a concurrent step has one outcome per worker, so it takes no expect; the invariants check it, and a state check can follow it"},
		{"fail without deliver", head + "      - expect: {rows: {processed: 0}}\n        fail: after-check\n", "f.yaml:6:9: fail belongs to a deliver step"},
		{"deliver and advance", head + "      - deliver: {id: e}\n        advance: 1h\n", "f.yaml:6:18: a step either delivers or advances the clock, not both"},
		{"empty id", head + "      - deliver: {id: \"\"}\n", "f.yaml:5:23: event id must not be empty"},
		{"id is a list", head + "      - deliver: {id: [a]}\n", "f.yaml:5:23: event id must be a string, not a list"},
		{"unknown event field", head + "      - deliver: {id: e, payload: {}}\n", "f.yaml:5:26: unknown field \"payload\" in deliver; expected one of id, source, type, subject, schema, time, headers, data"},
		{"duplicate label", head + "      - deliver: {id: e}\n        label: x\n      - deliver: {id: e}\n        label: x\n", "f.yaml:8:16: label \"x\" is already defined at line 5; labels must be unique in a file"},
		{"infinite number", head + "      - deliver: {id: e, data: {n: .inf}}\n", "f.yaml:5:32: data cannot be written as JSON: line 5: .inf is not a JSON number"},
		{"bad effect table", "version: 1\nhandler: {effect: \"drop table\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n", "f.yaml:2:19: effect must name a table with letters, digits and underscores (not processed), not \"drop table\""},
		{"consumer needs consumer-scoped", head + "      - deliver: {id: e}\n        consumer: b\n", "f.yaml:5:9: consumer on a step needs strategy consumer-scoped; a event-id handler is one consumer (set handler.consumer)"},
		{"external on event-id", "version: 1\nhandler: {key: \"{id}\", external: {key: k}}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n", "f.yaml:2:34: external is used only by strategy external-key, which calls a payment gateway; event-id does not call out"},
		{"bad template", "version: 1\nhandler: {strategy: business-key, key: \"{data.id\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n", "f.yaml:2:40: key is not a valid template: placeholder at byte 1 is not closed with }"},
		{"after-external on business-key", "version: 1\nhandler: {strategy: business-key, key: \"{id}\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n        fail: after-external\n", "f.yaml:6:9: fail: after-external is never reached by strategy business-key (only external-key calls out), so nothing would be injected there"},
		{"after-check on none, handler after the checks", "version: 1\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n        concurrent: 2\n        interleave: after-check\nhandler: {strategy: none}\n", "f.yaml:5:9: interleave: after-check is never reached by strategy none (it looks no marker up), so nothing would be injected there"},
		{"retention on none", "version: 1\nhandler: {strategy: none, retention: 1h}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n", "f.yaml:2:38: retention purges processed markers, and strategy none keeps none"},
		{"identity path", "version: 1\nhandler: {identity: [\"a b\"]}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n", "f.yaml:2:22: identity path \"a b\" must be dot-separated names such as data.orderId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("f.yaml", []byte(tt.src))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load error = %v, want scenario.Errors", err)
			}
			if errs[0].Error() != tt.want {
				t.Errorf("first error =\n  %s\nwant\n  %s\n(all: %v)", errs[0].Error(), tt.want, err)
			}
		})
	}
}

func TestAllErrorsReportedTogether(t *testing.T) {
	src := "version: 3\nhandler: {strategy: nope}\nchecks:\n  - name: a\n    steps:\n      - deliver: {data: {}}\n        fail: later\n"
	_, err := Load("f.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 4 {
		t.Fatalf("got %v, want 4 errors", err)
	}
	for i := 1; i < len(errs); i++ {
		if errs[i].Pos.Line < errs[i-1].Pos.Line {
			t.Errorf("errors not in file order: %v", err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"25h", 25 * time.Hour, true}, {"90s", 90 * time.Second, true}, {"7d", 168 * time.Hour, true},
		{"1h30m", 90 * time.Minute, true}, {"3 days", 0, false}, {"d", 0, false}, {"-1d", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// FuzzLoad feeds arbitrary bytes to the loader: it must never panic, and
// whatever it accepts must be runnable (every check named, every delivery
// with an id and a JSON envelope).
func FuzzLoad(f *testing.F) {
	f.Add([]byte(full))
	shipped, _ := filepath.Glob(filepath.Join("..", "..", "scenarios", "*.yaml"))
	for _, p := range shipped {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Load("fuzz.yaml", src)
		if err != nil {
			var errs Errors
			if errors.As(err, &errs) {
				for _, e := range errs {
					if e.Pos.File != "fuzz.yaml" || e.Msg == "" {
						t.Fatalf("error without a place or message: %#v", e)
					}
				}
			}
			return
		}
		for _, c := range s.Checks {
			if c.Name == "" {
				t.Fatal("accepted a check without a name")
			}
			for _, st := range c.Steps {
				if st.Kind == Deliver && (st.Event == nil || st.Event.ID == "" || len(st.Event.Envelope) == 0) {
					t.Fatalf("accepted a delivery without an id or envelope: %+v", st)
				}
				if st.Kind == Deliver {
					if _, err := handler.Canonical(st.Event.Envelope); err != nil {
						t.Fatalf("envelope %s is not JSON: %v", st.Event.Envelope, err)
					}
				}
			}
		}
	})
}
