package cmd

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadyAnsweredBeforeStart: when something already answers the start's
// ready check — a consumer left from an earlier run, here a server of the
// test's own — redeliver refuses with one sentence and starts nothing,
// instead of taking that answer for its consumer's and sending it the
// deliveries.
func TestReadyAnsweredBeforeStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	go srv.Serve(ln)
	defer srv.Close()
	addr := ln.Addr().String()
	tests := []struct{ name, ready, want string }{
		{"url", "http://" + addr + "/healthz", "the ready check already answers at http://" + addr + "/healthz before the consumer was started: another process (perhaps one left from an earlier run) holds it; stop it first"},
		{"tcp", "tcp://" + addr, "the ready check already answers at tcp://" + addr + " before the consumer was started: another process (perhaps one left from an earlier run) holds it; stop it first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			file := filepath.Join(dir, "s.yaml")
			src := `version: 1
target:
  http: {url: "http://` + addr + `/events"}
  start:
    command: [sh, -c, "echo yes > '` + started + `'; exec sleep 600"]
    ready: "` + tt.ready + `"
effects: {db: "` + filepath.Join(dir, "c.db") + `", table: payments, key: order_id, key_of: "{data.orderId}"}
checks:
  - name: one
    steps:
      - deliver: {id: evt-1, data: {orderId: O-1}}
`
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			s := &Streams{Out: &out, Err: &errb, Getenv: func(string) string { return "" }}
			code := Run(context.Background(), s, []string{"run", file})
			if code != ExitRuntime {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, ExitRuntime, errb.String())
			}
			if !strings.Contains(errb.String(), "redeliver: "+file+": "+tt.want) {
				t.Errorf("stderr:\n%s\nwant it to say %q", errb.String(), tt.want)
			}
			if _, err := os.Stat(started); err == nil {
				t.Errorf("the start command ran, although something already answered its ready check")
			}
		})
	}
}
