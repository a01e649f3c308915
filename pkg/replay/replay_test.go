package replay

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/builtin"
	"github.com/redeliver/redeliver/pkg/capture"
	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/handler"
	"github.com/redeliver/redeliver/pkg/invariant"
	"github.com/redeliver/redeliver/pkg/problem"
	"github.com/redeliver/redeliver/pkg/scenario"
	"github.com/redeliver/redeliver/pkg/sqlite"
)

func sample(name string) string { return filepath.Join("..", "..", "testdata", "capture", name) }

func run(t *testing.T, o Options) *Report {
	t.Helper()
	if o.DB == "" {
		o.DB = sqlite.Memory
	}
	rep, err := runSQLite(context.Background(), o)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return rep
}

// TestFindings replays each sample capture and checks what the report says
// the capture holds, exactly.
func TestFindings(t *testing.T) {
	tests := []struct {
		file     string
		capture  capture.Options
		want     CaptureReport
		reuse    []ReuseEx
		keys     []string
		outcomes Outcomes
	}{
		{"cloudevents.ndjson", capture.Options{},
			CaptureReport{Deliveries: 10, DistinctIDs: 7, RepeatedIDs: 2, IdentityReuse: 1, KeysWithSeveralIDs: 1},
			[]ReuseEx{{ID: "/orders/evt-4", First: "cloudevents.ndjson:5", Then: "cloudevents.ndjson:6"}},
			[]string{"order-3"},
			Outcomes{Processed: 7, Duplicate: 2, Conflict: 1}},
		{"cloudevents-batch.json", capture.Options{},
			CaptureReport{Deliveries: 3, DistinctIDs: 3}, nil, nil, Outcomes{Processed: 3}},
		{"kcat.jsonl", capture.Options{ID: "headers.ce_id"},
			CaptureReport{Deliveries: 5, DistinctIDs: 4, RepeatedIDs: 1, MarkedRedelivered: 1}, nil, nil, Outcomes{Processed: 4, Duplicate: 1}},
		{"sqs-receive.json", capture.Options{},
			CaptureReport{Deliveries: 3, DistinctIDs: 2, RepeatedIDs: 1, MarkedRedelivered: 1}, nil, nil, Outcomes{Processed: 2, Duplicate: 1}},
		{"lambda-sqs-sns.json", capture.Options{Key: "data.orderId"},
			CaptureReport{Deliveries: 3, DistinctIDs: 2, RepeatedIDs: 1, MarkedRedelivered: 1}, nil, nil, Outcomes{Processed: 2, Duplicate: 1}},
		{"nats.dump", capture.Options{},
			CaptureReport{Deliveries: 4, DistinctIDs: 3, RepeatedIDs: 1, MarkedRedelivered: 1}, nil, nil, Outcomes{Processed: 3, Duplicate: 1}},
		{"plain.ndjson", capture.Options{ID: "eventId", Key: "order.id"},
			CaptureReport{Deliveries: 3, DistinctIDs: 2, RepeatedIDs: 1}, nil, nil, Outcomes{Processed: 2, Duplicate: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rep := run(t, Options{Inputs: []string{sample(tt.file)}, Capture: tt.capture})
			c := rep.Capture
			got := CaptureReport{Deliveries: c.Deliveries, DistinctIDs: c.DistinctIDs, RepeatedIDs: c.RepeatedIDs,
				IdentityReuse: c.IdentityReuse, KeysWithSeveralIDs: c.KeysWithSeveralIDs, MarkedRedelivered: c.MarkedRedelivered}
			if !equalJSON(got, tt.want) {
				t.Errorf("capture %+v, want %+v", got, tt.want)
			}
			for i := range tt.reuse {
				tt.reuse[i].First = sample(tt.reuse[i].First)
				tt.reuse[i].Then = sample(tt.reuse[i].Then)
			}
			if len(tt.reuse) > 0 && !equalJSON(c.ReuseExamples, tt.reuse) {
				t.Errorf("reuse examples %+v, want %+v", c.ReuseExamples, tt.reuse)
			}
			var keys []string
			for _, k := range c.KeyExamples {
				keys = append(keys, k.Key)
			}
			if strings.Join(keys, ",") != strings.Join(tt.keys, ",") {
				t.Errorf("keys under several ids %v, want %v", keys, tt.keys)
			}
			if *rep.Outcomes != tt.outcomes {
				t.Errorf("outcomes %+v, want %+v", rep.Outcomes, tt.outcomes)
			}
			// One order under two ids: the default strategy (event-id)
			// makes two effects for it, and one effect per business key is
			// checked whatever the strategy.
			wantPass := tt.keys == nil
			if rep.Passed() != wantPass {
				t.Errorf("verdict %s, violations %+v", rep.Verdict, rep.Violations)
			}
			if !wantPass && (len(rep.Violations) != 1 || rep.Violations[0].Invariant != string(invariant.DuplicateKey.Name)) {
				t.Errorf("violations %+v, want duplicate-key alone", rep.Violations)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func bigCapture(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capture.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCapture(f, n, 7); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInjection checks what each kind of injection does to a safe and an
// unsafe consumer.
func TestInjection(t *testing.T) {
	path := bigCapture(t, 1000)
	base := run(t, Options{Inputs: []string{path}})
	distinct := base.Capture.DistinctIDs
	tests := []struct {
		name      string
		o         Options
		pass      bool
		broken    []string
		check     func(t *testing.T, r *Report)
		effectsEq int64 // effects expected; -1 to skip
	}{
		{"redeliver, event-id", Options{Redeliver: 0.3}, true, nil, func(t *testing.T, r *Report) {
			if r.Injected.Redelivered == 0 || r.Outcomes.Crashed != r.Injected.Redelivered {
				t.Errorf("redelivered %d, crashed %d: want equal and above zero", r.Injected.Redelivered, r.Outcomes.Crashed)
			}
		}, distinct},
		{"redeliver, none", Options{Redeliver: 0.3, Handler: handler.Config{Strategy: handler.None}}, false, []string{"duplicate-effect"}, nil, -1},
		{"crash mid-transaction, event-id", Options{Crash: 0.3}, true, nil, func(t *testing.T, r *Report) {
			if r.Injected.Crashed == 0 || r.Outcomes.Failed != r.Injected.Crashed {
				t.Errorf("crashed %d, failed %d: want equal and above zero", r.Injected.Crashed, r.Outcomes.Failed)
			}
		}, distinct},
		{"crash after-marker, marker-after-effect", Options{Crash: 0.3, CrashAt: []consumer.FaultPoint{consumer.AfterMarker}, Handler: handler.Config{Strategy: handler.MarkerAfterEffect}}, false, []string{"duplicate-effect"}, nil, -1},
		{"rewind, event-id", Options{Rewind: 50}, true, nil, func(t *testing.T, r *Report) {
			if r.Injected.Rebalances == 0 || r.Injected.Rewound != 50*r.Injected.Rebalances {
				t.Errorf("%d rebalances rewound %d deliveries, want 50 each", r.Injected.Rebalances, r.Injected.Rewound)
			}
		}, distinct},
		{"republish, event-id makes a second effect", Options{Republish: 0.1}, true, nil, func(t *testing.T, r *Report) {
			if r.Injected.Republished == 0 || r.Effects != distinct+r.Injected.Republished {
				t.Errorf("%d republished, %d effects; want %d", r.Injected.Republished, r.Effects, distinct+r.Injected.Republished)
			}
		}, -1},
		{"republish, business-key dedups", Options{Republish: 0.1, Capture: capture.Options{Key: "data.orderId"}, Handler: handler.Config{Strategy: handler.BusinessKey}}, true, nil, nil, distinct},
		{"everything, event-id", Options{Redeliver: 0.2, Crash: 0.2, Rewind: 20, Republish: 0.05, Handler: handler.Config{Strategy: handler.BusinessKey}, Capture: capture.Options{Key: "data.orderId"}}, true, nil, nil, distinct},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each replay has a database of its own
			o := tt.o
			o.Inputs, o.Seed = []string{path}, 42
			r := run(t, o)
			if r.Passed() != tt.pass {
				t.Fatalf("passed %v, want %v (violations %+v)", r.Passed(), tt.pass, r.Violations)
			}
			var broken []string
			for _, v := range r.Violations {
				broken = append(broken, v.Invariant)
			}
			if strings.Join(broken, ",") != strings.Join(tt.broken, ",") {
				t.Errorf("broken %v, want %v", broken, tt.broken)
			}
			if tt.effectsEq >= 0 && r.Effects != tt.effectsEq {
				t.Errorf("%d effects, want %d", r.Effects, tt.effectsEq)
			}
			if r.Capture.Deliveries != base.Capture.Deliveries {
				t.Errorf("capture deliveries %d, want %d: injection must not change what the capture holds", r.Capture.Deliveries, base.Capture.Deliveries)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestSameSeedSameReport: every injected fault comes from --seed.
func TestSameSeedSameReport(t *testing.T) {
	path := bigCapture(t, 800)
	o := Options{Inputs: []string{path}, Redeliver: 0.2, Crash: 0.1, Rewind: 10, Republish: 0.05, Handler: handler.Config{Strategy: handler.None}}
	report := func(seed int64) []byte {
		o := o
		o.Seed = seed
		b, _ := json.Marshal(run(t, o))
		return b
	}
	a, b, c := report(5), report(5), report(6)
	if !bytes.Equal(a, b) {
		t.Errorf("seed 5 gave two different reports:\n%s\n%s", a, b)
	}
	if bytes.Equal(a, c) {
		t.Errorf("seeds 5 and 6 gave the same report; --seed does not reach the injection")
	}
}

func TestFailOn(t *testing.T) {
	tests := []struct {
		failOn []Finding
		want   []Finding
	}{
		{nil, nil},
		{[]Finding{IdentityReuse}, []Finding{IdentityReuse}},
		{[]Finding{RepeatedIDs, KeysWithSeveralIDs, BadRecords}, []Finding{RepeatedIDs, KeysWithSeveralIDs}},
	}
	for _, tt := range tests {
		r := run(t, Options{Inputs: []string{sample("cloudevents.ndjson")}, FailOn: tt.failOn, Handler: handler.Config{Strategy: handler.BusinessKey}})
		if !equalJSON(r.FailedOn, append([]Finding{}, tt.want...)) || r.Passed() != (len(tt.want) == 0) {
			t.Errorf("--fail-on %v: failed on %v (verdict %s), want %v", tt.failOn, r.FailedOn, r.Verdict, tt.want)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	in := []string{sample("cloudevents.ndjson")}
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"concurrent", Options{Inputs: in, Concurrent: 0.1}, "--concurrent needs a store that runs transactions side by side"},
		{"probability", Options{Inputs: in, Redeliver: 1.5}, "--redeliver must be a probability"},
		{"crash at commit", Options{Inputs: in, Crash: 0.1, CrashAt: []consumer.FaultPoint{consumer.AfterCommit}}, "not a mid-transaction point"},
		{"no file", Options{Inputs: []string{"nope.ndjson"}}, "nope.ndjson: no such capture file"},
		{"two stdins", Options{Inputs: []string{"-", "-"}}, "read only once"},
		{"external-key", Options{Inputs: in, Handler: handler.Config{Strategy: handler.ExternalKey}}, "payment gateway"},
		{"PostgreSQL", Options{Inputs: in, DB: "postgres://postgres@127.0.0.1:5432/test"}, "replay runs on embedded SQLite: --db takes :memory: or a file, not a PostgreSQL URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runSQLite(context.Background(), tt.o)
			var ie *problem.Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want an input error with %q", err, tt.want)
			}
		})
	}
}

func TestBadRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.ndjson")
	src := `{"specversion":"1.0","id":"a","source":"/s","data":{}}
{"specversion":"1.0","id":"b","source":"/s","data":{}
{"specversion":"1.0","source":"/s","data":{}}
{"specversion":"1.0","id":"c","source":"/s","data":{}}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		maxBad int
		err    string
		good   int
	}{
		{0, "bad.ndjson:2: record is not valid JSON", 0},
		{1, "bad.ndjson:3: the event has no id", 0},
		{2, "", 2},
	}
	for _, tt := range tests {
		var warn bytes.Buffer
		rep, err := runSQLite(context.Background(), Options{Inputs: []string{path}, DB: sqlite.Memory, MaxBad: tt.maxBad, Warn: &warn})
		if tt.err != "" {
			var ie *problem.Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("--max-bad %d: err %v, want %q", tt.maxBad, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("--max-bad %d: %v", tt.maxBad, err)
		}
		if rep.Capture.Deliveries != int64(tt.good) || rep.Capture.BadRecords != 2 {
			t.Errorf("--max-bad %d: %d deliveries, %d bad; want %d and 2", tt.maxBad, rep.Capture.Deliveries, rep.Capture.BadRecords, tt.good)
		}
		if !strings.Contains(warn.String(), "skipped "+path+":2:") || !strings.Contains(warn.String(), "skipped "+path+":3:") {
			t.Errorf("warnings %q, want lines 2 and 3 named", warn.String())
		}
	}
}

// TestReproducer: an unsafe replay writes a small scenario, and running
// that scenario breaks the same invariant.
func TestReproducer(t *testing.T) {
	path := bigCapture(t, 800)
	out := filepath.Join(t.TempDir(), "repro.yaml")
	tests := []struct {
		name string
		o    Options
		want invariant.Name
	}{
		{"none with redeliveries", Options{Redeliver: 0.3, Handler: handler.Config{Strategy: handler.None}}, invariant.DuplicateEffect.Name},
		{"marker-after-effect with crashes", Options{Crash: 0.3, CrashAt: []consumer.FaultPoint{consumer.AfterMarker}, Handler: handler.Config{Strategy: handler.MarkerAfterEffect}}, invariant.DuplicateEffect.Name},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Inputs, o.EmitScenario, o.Seed = []string{path}, out, 3
			rep := run(t, o)
			if rep.Passed() || rep.Reproducer != out {
				t.Fatalf("verdict %s, reproducer %q; want a failure written to %s", rep.Verdict, rep.Reproducer, out)
			}
			if rep.ReproducerSteps < 1 || rep.ReproducerSteps > 4 {
				t.Errorf("reproducer has %d deliveries; want it shrunk to a few", rep.ReproducerSteps)
			}
			sc, err := scenario.LoadFile(out)
			if err != nil {
				t.Fatalf("reproducer does not load: %v", err)
			}
			fr, err := builtin.RunFile(context.Background(), sc, func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
				return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
			})
			if err != nil {
				t.Fatal(err)
			}
			if fr.Passed() {
				t.Fatalf("the reproducer passes")
			}
			found := false
			for _, v := range fr.Checks[0].Violations {
				found = found || v.Invariant == tt.want
			}
			if !found {
				t.Errorf("the reproducer breaks %+v, want %s", fr.Checks[0].Violations, tt.want)
			}
		})
	}
}

// TestResume: replaying the same log onto the same file makes no new effects.
func TestResume(t *testing.T) {
	path := bigCapture(t, 1000)
	db := filepath.Join(t.TempDir(), "replay.db")
	o := Options{Inputs: []string{path}, DB: db, Redeliver: 0.2, Seed: 9}
	first := run(t, o)
	if first.Resumed || first.NewEffects != first.Effects || first.Effects == 0 {
		t.Fatalf("first replay: resumed %v, %d new of %d effects", first.Resumed, first.NewEffects, first.Effects)
	}
	again := run(t, o)
	if !again.Resumed || again.NewEffects != 0 || again.Effects != first.Effects || !again.Passed() {
		t.Errorf("second replay: resumed %v, %d new, %d effects (first %d), verdict %s; want resumed, 0 new, same effects, pass",
			again.Resumed, again.NewEffects, again.Effects, first.Effects, again.Verdict)
	}
	other := o
	other.Handler.Strategy = handler.None
	if _, err := runSQLite(context.Background(), other); err == nil || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("resuming with another strategy: err %v, want a refusal", err)
	}
}

// The kill test runs the replay in a child process (this test binary) and
// kills it with SIGKILL mid-way.
const childEnv = "REDELIVER_REPLAY_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		var c childSpec
		if err := json.Unmarshal([]byte(spec), &c); err != nil {
			os.Exit(3)
		}
		o := c.options()
		if c.HoldAt > 0 {
			// Stop handing deliveries over once HoldAt are handled, with a
			// group open, and wait to be killed: however fast the machine,
			// the kill lands mid-way.
			o.Progress = func(n, _ int64) {
				if n >= c.HoldAt {
					select {}
				}
			}
		}
		if _, err := runSQLite(context.Background(), o); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childSpec is what the child replay is told, as JSON.
type childSpec struct {
	Inputs           []string
	DB               string
	Redeliver, Crash float64
	Seed             int64
	Batch            int
	HoldAt           int64 // deliveries after which the child waits to be killed
}

func (c childSpec) options() Options {
	return Options{Inputs: c.Inputs, DB: c.DB, Redeliver: c.Redeliver, Crash: c.Crash, Seed: c.Seed, Batch: c.Batch}
}

func effectsIn(t *testing.T, db string) (n, distinct int64) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.QueryRow(`SELECT count(*), count(DISTINCT event_id) FROM effects`).Scan(&n, &distinct); err != nil {
		return 0, 0
	}
	return n, distinct
}

// TestKilledReplayResumes: a replay killed with SIGKILL and started again
// ends with the same effects as one uninterrupted run.
func TestKilledReplayResumes(t *testing.T) {
	path := bigCapture(t, 6000)
	db := filepath.Join(t.TempDir(), "replay.db")
	// The child reports progress every 4,096 deliveries and holds at the
	// first report, with 8 groups of 500 committed and one open.
	c := childSpec{Inputs: []string{path}, DB: db, Redeliver: 0.2, Crash: 0.1, Seed: 11, Batch: 500, HoldAt: 4096}
	o := c.options()
	spec, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+string(spec))
	var stderr bytes.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	// Wait until some batches are committed, then kill without warning.
	var before int64
	for before < 2000 {
		select {
		case err := <-exited:
			t.Fatalf("the replay ended (%v, %s) before it could be killed", err, stderr.String())
		default:
		}
		before, _ = effectsIn(t, db)
		time.Sleep(20 * time.Millisecond) // leave the cores to the child
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	killedAt, _ := effectsIn(t, db)
	resumed := run(t, o)
	want := run(t, Options{Inputs: []string{path}, DB: sqlite.Memory, Redeliver: 0.2, Crash: 0.1, Seed: 11})
	if killedAt >= want.Effects {
		t.Fatalf("the killed replay had already written all %d effects; it was not killed mid-way", killedAt)
	}
	n, distinct := effectsIn(t, db)
	if n != want.Effects || distinct != want.Effects || !resumed.Passed() {
		t.Errorf("after kill at %d effects and resume: %d effects (%d distinct events), verdict %s; an uninterrupted run makes %d",
			killedAt, n, distinct, resumed.Verdict, want.Effects)
	}
}

// TestUnexpectedFailures: a delivery that fails where no fault was injected
// fails the replay and says why; injected failures do not.
func TestUnexpectedFailures(t *testing.T) {
	tests := []struct {
		name     string
		o        Options
		count    int64
		verdict  invariant.Verdict
		contains string
	}{
		{"business key that does not resolve", Options{Capture: capture.Options{ID: "eventId"}, Handler: handler.Config{Strategy: handler.BusinessKey}},
			3, "fail", "needs a business key and the record gives none; name the field that holds it with --key PATH"},
		{"business key named", Options{Capture: capture.Options{ID: "eventId", Key: "order.id"}, Handler: handler.Config{Strategy: handler.BusinessKey}},
			0, "pass", ""},
		{"injected crashes only", Options{Capture: capture.Options{ID: "eventId"}, Crash: 1},
			0, "pass", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Inputs = []string{sample("plain.ndjson")}
			r := run(t, tt.o)
			if r.Unexpected.Count != tt.count || r.Verdict != tt.verdict {
				t.Fatalf("unexpected failures %d, verdict %s; want %d, %s", r.Unexpected.Count, r.Verdict, tt.count, tt.verdict)
			}
			if tt.count == 0 {
				if tt.o.Crash > 0 && r.Outcomes.Failed == 0 {
					t.Errorf("no delivery failed: the injected crashes did not fire")
				}
				return
			}
			if len(r.Unexpected.Examples) == 0 || !strings.Contains(r.Unexpected.Examples[0].Error, tt.contains) {
				t.Errorf("examples %+v; want one saying %q", r.Unexpected.Examples, tt.contains)
			}
			if at := consumer.Location(r.Unexpected.Examples[0].At); at.Line != 1 {
				t.Errorf("first example at %s, want line 1 of the capture", at)
			}
		})
	}
}

// TestOneEffectPerKeyForEveryStrategy: when the capture gives business keys,
// one effect per key is checked whatever the strategy, and the report says
// which strategies would have been safe on the capture.
func TestOneEffectPerKeyForEveryStrategy(t *testing.T) {
	orders := filepath.Join("..", "..", "scenarios", "captures", "orders.ndjson")
	tests := []struct {
		name     string
		o        Options
		pass     bool
		safe     string // the strategies the comparison calls safe
		reproKey bool   // the reproducer carries the key and fails under run
	}{
		{"event-id, one order under two ids", Options{Inputs: []string{orders}, Compare: true}, false, "business-key", true},
		{"business-key on the same capture", Options{Inputs: []string{orders}, Compare: true, Handler: handler.Config{Strategy: handler.BusinessKey}}, true, "business-key", false},
		{"event-id with republished events", Options{Inputs: []string{sample("kcat.jsonl")}, Capture: capture.Options{ID: "headers.ce_id"}, Republish: 0.5, Compare: true}, false, "business-key", false},
		{"no comparison unless asked", Options{Inputs: []string{orders}}, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reproKey {
				tt.o.EmitScenario = filepath.Join(t.TempDir(), "repro.yaml")
			}
			r := run(t, tt.o)
			if r.Passed() != tt.pass {
				t.Fatalf("verdict %s, violations %+v", r.Verdict, r.Violations)
			}
			if !tt.pass && !slices.ContainsFunc(r.Violations, func(v Violation) bool { return v.Invariant == string(invariant.DuplicateKey.Name) }) {
				t.Errorf("violations %+v, want duplicate-key among them", r.Violations)
			}
			var safe []string
			for _, s := range r.Strategies {
				if s.Safe {
					safe = append(safe, string(s.Strategy))
				}
				if s.Safe != (s.MostPerKey <= 1 && len(s.Broken) == 0) {
					t.Errorf("row %+v: safe does not follow the effects per key", s)
				}
			}
			if got := strings.Join(safe, ","); got != tt.safe {
				t.Errorf("safe strategies %q, want %q (rows %+v)", got, tt.safe, r.Strategies)
			}
			if tt.o.Compare && len(r.Strategies) != len(compared) {
				t.Errorf("%d rows, want one per strategy a replay can run (%d)", len(r.Strategies), len(compared))
			}
			if tt.reproKey {
				src, err := os.ReadFile(tt.o.EmitScenario)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(src), `key: "{subject}"`) || !strings.Contains(string(src), "break invariant duplicate-key") {
					t.Errorf("reproducer does not carry the key:\n%s", src)
				}
			}
		})
	}
}

// runSQLite replays into the SQLite store, as the command wires it.
func runSQLite(ctx context.Context, o Options) (*Report, error) {
	o.Open = sqlite.OpenLedger
	o.OpenSplit = sqlite.OpenSplitLedger
	o.OpenScenario = func(ctx context.Context, s *scenario.Scenario) (builtin.Store, error) {
		return sqlite.Create(ctx, sqlite.Memory, s.Handler.Config)
	}
	return Run(ctx, o)
}
