package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redeliver/redeliver/pkg/escape"
	"github.com/redeliver/redeliver/pkg/inject"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/replay"
	"go.yaml.in/yaml/v3"
)

// maxReproduced bounds the deliver steps of a reproducer: one key's
// events, in capture order, up to this many.
const maxReproduced = 500

// reproStep is one captured event of the broken key, with the fault the
// replay injected into it.
type reproStep struct {
	ev      Event
	pos     int64  // its position in the capture
	at      string // its capture line
	fault   inject.Fault
	after   time.Duration // a crash's delay
	rewound bool          // a --rewind rebalance delivered it again, plainly
}

// emit writes the reproducer of a failed replay into a target: a target
// scenario with the externals, target and effects of the --target file and one check
// that delivers the events of the first broken key (or event), in capture
// order, with the faults the replay injected into them where a scenario
// can say them (drop: response, crash: {after: D} — through the
// statement proxy, crash: statements —, concurrent: 2), and delivers
// again, where a --rewind rebalance came, the ones it delivered again
// (inject.Rewind: the same schedule, drawn again). Every fault is a
// function of --seed and the event's position (pkg/inject), so the
// capture is read again and nothing of the replay had to be kept.
func (r *replayer) emit(ctx context.Context, v invariant.Violation) ([]byte, int, error) {
	key, id := "", v.EventID
	if v.By != nil {
		key = v.By.Key
	}
	match := func(k string, ev Event) bool {
		if key != "" {
			return k == key
		}
		return ev.ID == id
	}
	var steps []reproStep
	// The capture read again by the replay's engine, in one lane: the same
	// faults by position, and the same rebalances, which make the key's
	// last deliveries again after the one they came after. Its bad
	// records were named when it was first read.
	eng := r.newEngine(nil)
	eng.Lanes = 1
	err := eng.Run(ctx, replay.GoLanes(1, func(int) replay.Lane[job] {
		return collectLane(func(p replay.Planned[job]) {
			c := p.Delivery.ev
			ev := EventOf(c.Envelope)
			if ev.ID == "" {
				ev.ID = c.ID
			}
			if !match(p.Delivery.key, ev) || len(steps) == maxReproduced {
				return
			}
			s := reproStep{ev: ev, pos: p.Pos, at: c.At.String(), fault: p.Fault, rewound: p.Rewound}
			if s.fault == inject.Crash && r.sess.proxy == nil {
				s.after = crashDelay(r.sess.t.Timeout(), r.o.Seed, p.Pos)
			}
			steps = append(steps, s)
		})
	}))
	if err != nil {
		return nil, 0, err
	}
	if len(steps) == 0 {
		return nil, 0, fmt.Errorf("no event of the broken key was found again in the capture to write a reproducer")
	}
	return r.reproducer(steps, v, key)
}

// collectLane is a lane of the replay engine that delivers nothing: it
// sees each delivery planned.
type collectLane func(p replay.Planned[job])

func (c collectLane) Deliver(_ context.Context, p replay.Planned[job]) error { c(p); return nil }
func (c collectLane) Finish(context.Context) error                           { return nil }

// crashDelay is how long after a delivery at pos a --crash kills the
// consumer: up to the target's timeout, at most 100 ms.
func crashDelay(timeout time.Duration, seed, pos int64) time.Duration {
	limit := min(timeout, 100*time.Millisecond)
	return time.Duration(inject.Draw(seed, pos, inject.SlotPoint) % uint64(limit))
}

// reproducer writes the scenario: version, a name, the target and effects
// nodes of the --target file as they are (its ${VAR}s expand again when
// it runs), and the check.
func (r *replayer) reproducer(steps []reproStep, v invariant.Violation, key string) ([]byte, int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(r.t.Source, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, 0, fmt.Errorf("read the --target file again to write the reproducer: %v", err)
	}
	root := reproducerRoot(doc.Content[0].Content)
	var b bytes.Buffer
	what := "event " + v.EventID
	if key != "" {
		what = "key " + key
	}
	// Comments hold file names and keys, which may hold anything: escaped,
	// so that none can end the comment and write YAML of its own.
	fmt.Fprintf(&b, "# A reproducer written by redeliver replay --seed %d --target %s from %s:\n", r.o.Seed, escape.Line(r.t.File), escape.Line(inputNames(r.o.Inputs)))
	fmt.Fprintf(&b, "# the deliveries of %s, which broke invariant %s. Run it with: redeliver run %s\n", escape.Line(what), v.Invariant, escape.Line(r.o.EmitScenario))
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, 0, err
	}
	if err := enc.Close(); err != nil {
		return nil, 0, err
	}
	b.WriteString("checks:\n")
	fmt.Fprintf(&b, "  - name: %s\n    steps:\n", escape.Quote("replayed deliveries of "+what+" break "+string(v.Invariant)))
	n := 0
	for _, s := range steps {
		fault, note := s.fault, faultNote(s.fault)
		if s.rewound {
			fault, note = inject.None, ", delivered again by --rewind"
		}
		if err := r.writeDeliverStep(&b, s, fault, note); err != nil {
			return nil, 0, err
		}
		n++
	}
	return b.Bytes(), n, nil
}

// reproducerRoot is the reproducer's top mapping: its version and name,
// then the externals, target and effects nodes of the --target file's
// top mapping (from) as they are.
func reproducerRoot(from []*yaml.Node) *yaml.Node {
	root := &yaml.Node{Kind: yaml.MappingNode}
	scalar := func(k, v string) {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
	}
	scalar("version", "1")
	root.Content[1].Tag = "!!int"
	scalar("name", "replay reproducer")
	for _, want := range []string{"externals", "target", "effects"} {
		for i := 0; i+1 < len(from); i += 2 {
			if from[i].Value == want {
				root.Content = append(root.Content, from[i], from[i+1])
			}
		}
	}
	return root
}

// writeDeliverStep writes to b the deliver step of one captured event,
// with fault as a scenario says it and note after its capture line.
func (r *replayer) writeDeliverStep(b *bytes.Buffer, s reproStep, fault inject.Fault, note string) error {
	ev, err := stepEvent(s.ev)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "      - deliver: %s # %s%s\n", ev, escape.Line(s.at), note)
	switch fault {
	case inject.Redeliver:
		b.WriteString("        drop: response\n")
	case inject.Crash:
		if r.sess != nil && r.sess.proxy != nil {
			// The replay killed it at a statement boundary drawn by
			// position; a scenario names statements by their words,
			// and tries every boundary with crash: statements.
			b.WriteString("        crash: statements\n")
			break
		}
		fmt.Fprintf(b, "        crash: {after: %s}\n", s.after.Round(time.Microsecond))
	case inject.Concurrent:
		b.WriteString("        concurrent: 2\n")
	}
	return nil
}

func faultNote(f inject.Fault) string {
	switch f {
	case inject.Redeliver:
		return ", its ack lost (--redeliver)"
	case inject.Crash:
		return ", the consumer killed (--crash)"
	case inject.Concurrent:
		return ", delivered twice at once (--concurrent)"
	}
	return ""
}

// stepEvent is the event a deliver step sends, as a YAML flow mapping
// (JSON, which YAML reads as it is).
func stepEvent(ev Event) (string, error) {
	doc := struct {
		ID      string            `json:"id"`
		Source  string            `json:"source,omitempty"`
		Type    string            `json:"type,omitempty"`
		Subject string            `json:"subject,omitempty"`
		Time    string            `json:"time,omitempty"`
		Headers map[string]string `json:"headers,omitempty"`
		Data    json.RawMessage   `json:"data,omitempty"`
	}{ev.ID, ev.Source, ev.Type, ev.Subject, ev.Time, ev.Headers, ev.Data}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(b.Bytes(), "\n")), nil
}

func inputNames(ins []string) string {
	var b bytes.Buffer
	for i, in := range ins {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(in)
	}
	return b.String()
}
