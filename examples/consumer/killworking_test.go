package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// workingLine finds what --kill-working did on a replay's line.
var workingLine = regexp.MustCompile(`; --kill-working 1: ([0-9]+) deliveries drawn, ([0-9]+) instance kills? at their statements, ([0-9]+) of them interrupting a delivery`)

// TestBrokerReplayKillWorking replays 20 payments into two instances
// behind JetStream, connected through redeliver's proxy (to PostgreSQL,
// and to MySQL or MariaDB), with
// --kill-working 1: each delivery has the instance working on it killed
// at a boundary of its statements drawn from --seed (those whose
// statements end before it are not). The safe consumer survives every
// kill, one payment per order; ack-before-commit, killed after its ack
// and before its commit, loses payments; marker-after-effect, killed
// between its two commits, pays twice. The line and the JSON report count
// the kills, and those that interrupted a delivery's work.
func TestBrokerReplayKillWorking(t *testing.T) {
	defer parallel(t)()
	dbs := statementDBs(t)
	bin := buildConsumer(t)
	const events = 20
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	var b strings.Builder
	for i := range events {
		fmt.Fprintf(&b, `{"specversion":"1.0","id":"evt-%d","source":"/orders","type":"order_paid","data":{"orderId":"O-%d","amount":%d}}`+"\n", i, i, i+1)
	}
	if err := os.WriteFile(capture, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, db := range dbs {
		for i, tt := range []struct {
			flaw, invariant string
		}{
			{"safe", ""},
			{"ack-before-commit", "lost-effect"},
			{"marker-after-effect", "duplicate-effect"},
		} {
			t.Run(db.name+"/"+tt.flaw, func(t *testing.T) {
				onTurn(t, i, dbs, db)
				defer parallelInHeavy(t)()
				dsn := db.fresh(t)
				db.brokerSlot(t)
				env := map[string]string{"CONSUMER": bin, "FLAW": tt.flaw, "DATABASE_URL": dsn}
				natsStream(t, env)
				doc := filepath.Join(t.TempDir(), "replay.json")
				o := redeliver(t, env, "replay", capture, "--target", "examples/consumer/brokers/nats-working.yaml",
					"--kill-working", "1", "--seed", "1", "--coverage", "--report", "json="+doc)
				t.Log(o.stdout)
				if tt.invariant == "" {
					if o.exit != 0 || !strings.Contains(o.stdout, fmt.Sprintf("%d published, ", events)) || !strings.Contains(o.stdout, fmt.Sprintf(", %d effect rows", events)) {
						t.Fatalf("want exit 0 and one payment per order, got\n%s", o)
					}
				} else if o.exit != 1 || !strings.Contains(o.stdout, "invariant "+tt.invariant+" broken") {
					t.Fatalf("want exit 1 naming %s, got\n%s", tt.invariant, o)
				}
				m := workingLine.FindStringSubmatch(o.stdout)
				if m == nil {
					t.Fatalf("no --kill-working count on the line:\n%s", o)
				}
				drawn, _ := strconv.Atoi(m[1])
				killed, _ := strconv.Atoi(m[2])
				interrupted, _ := strconv.Atoi(m[3])
				if drawn != events || killed == 0 || interrupted == 0 || interrupted > killed {
					t.Fatalf("want every delivery drawn, kills, and some interrupting, got drawn %d, killed %d, interrupted %d:\n%s", drawn, killed, interrupted, o)
				}
				if tt.flaw == "ack-before-commit" {
					// Its ack is confirmed (DoubleAck) before its first
					// statement: a kill before its commit loses the payment,
					// one after it loses nothing. The payments lost are the
					// kills that interrupted a delivery, one for one.
					if want := fmt.Sprintf("invariant lost-effect broken %d times", interrupted); interrupted > 1 && !strings.Contains(o.stdout, want) {
						t.Errorf("want %q (the interrupting kills), got\n%s", want, o)
					}
				}
				// The line's instance kills are the kills at statements, and
				// the coverage section says the same.
				if !strings.Contains(o.stdout, fmt.Sprintf("%d published, %d instance kills, ", events, killed)) || !strings.Contains(o.stdout, "\n  --kill-working 1: "+m[1]) {
					t.Errorf("want %d instance kills on the line and the kills in the coverage section, got\n%s", killed, o)
				}
				raw, err := os.ReadFile(doc)
				if err != nil {
					t.Fatal(err)
				}
				var d struct {
					Target struct {
						Working *struct {
							Probability                                float64
							Drawn, Killed, Interrupted, Missed, Untied int
						} `json:"working_kills"`
					} `json:"target"`
				}
				if err := json.Unmarshal(raw, &d); err != nil {
					t.Fatal(err)
				}
				w := d.Target.Working
				if w == nil || w.Probability != 1 || w.Drawn != drawn || w.Killed != killed || w.Interrupted != interrupted || w.Drawn != w.Killed+w.Missed+w.Untied || w.Untied != 0 {
					t.Fatalf("JSON target.working_kills = %+v, want the line's drawn %d, killed %d, interrupted %d, and nothing untied", w, drawn, killed, interrupted)
				}
			})
		}
	}
}
