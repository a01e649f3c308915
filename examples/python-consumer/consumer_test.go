// Package pythonconsumer tests consumer.py, the Python example consumer, as
// a real process: started in its own process group, spoken to over HTTP,
// its SQLite file read afterwards, and stopped with nothing left behind.
package pythonconsumer

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// python3 finds the interpreter; under CI=true its absence fails.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but python3 is not installed: the Python example consumer cannot be tested")
		}
		t.Skip("python3 not found: the Python example consumer is not tested")
	}
	return p
}

// start runs consumer.py on a free port and returns its base URL. The
// process (and its group) is stopped when the test ends, and the test
// fails if anything of the group is left.
func start(t *testing.T, db string) string {
	t.Helper()
	cmd := exec.Command(python3(t), "consumer.py", "--port", "0", "--db", db)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	var waitOnce sync.Once
	wait := func() { waitOnce.Do(func() { cmd.Wait() }) }
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
			t.Error("consumer.py did not stop within 30s of SIGTERM; killed")
		}
		if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still has members after the consumer stopped (kill 0: %v)", pgid, err)
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			t.Fatalf("consumer.py said %q, want listening on ADDR", line)
		}
		return "http://" + addr
	case <-time.After(60 * time.Second):
		t.Fatalf("consumer.py did not start within 60s; stderr: %s", stderr.String())
	}
	return ""
}

func cloudEvent(id, order string) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/orders","type":"order.created","data":{"orderId":%q}}`, id, order)
}

func count(t *testing.T, db, table string) int {
	t.Helper()
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n int
	if err := conn.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConsumer runs the fixture's story, and malformed requests,
// against the Python service.
func TestConsumer(t *testing.T) {
	type request struct {
		contentType, body string
		status            int
		answer            string
	}
	structured := "application/cloudevents+json"
	tests := []struct {
		name                 string
		requests             []request
		shipments, processed int
	}{
		{"duplicate delivery", []request{
			{structured, cloudEvent("evt-1", "order-1"), 200, `"outcome": "processed"`},
			{structured, cloudEvent("evt-1", "order-1"), 200, `"outcome": "duplicate"`},
		}, 1, 1},
		{"identity conflict", []request{
			{structured, cloudEvent("evt-1", "order-1"), 200, `"outcome": "processed"`},
			{structured, cloudEvent("evt-1", "other-order"), 409, `"outcome": "conflict"`},
		}, 1, 1},
		{"two events", []request{
			{structured, cloudEvent("evt-1", "order-1"), 200, `"processed"`},
			{structured, cloudEvent("evt-2", "order-2"), 200, `"processed"`},
		}, 2, 2},
		{"not a structured CloudEvent", []request{
			{"application/json", `{"orderId":"order-1"}`, 400, "want a structured CloudEvent"},
		}, 0, 0},
		{"not JSON", []request{{structured, `{`, 400, "not JSON"}}, 0, 0},
		{"no id", []request{{structured, `{"specversion":"1.0","data":{"orderId":"o"}}`, 400, "no id"}}, 0, 0},
		{"no orderId", []request{{structured, `{"specversion":"1.0","id":"e","data":{}}`, 400, "data.orderId"}}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each case is a process of its own, mostly starting Python
			db := filepath.Join(t.TempDir(), "shipping.db")
			url := start(t, db)
			health, err := http.Get(url + "/healthz")
			if err != nil || health.StatusCode != 200 {
				t.Fatalf("GET /healthz: %v %v", health, err)
			}
			health.Body.Close()
			for i, r := range tt.requests {
				resp, err := http.Post(url+"/events", r.contentType, strings.NewReader(r.body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != r.status || !strings.Contains(string(body), r.answer) {
					t.Errorf("request %d: %d %s, want %d and %q", i+1, resp.StatusCode, body, r.status, r.answer)
				}
			}
			if got := count(t, db, "shipments"); got != tt.shipments {
				t.Errorf("%d shipments, want %d", got, tt.shipments)
			}
			if got := count(t, db, "processed_messages"); got != tt.processed {
				t.Errorf("%d processed markers, want %d", got, tt.processed)
			}
		})
	}
}

// TestConcurrentDuplicates: eight deliveries of one event at once make one
// shipment (the IMMEDIATE transaction serialises them).
func TestConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "shipping.db")
	url := start(t, db)
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(url+"/events", "application/cloudevents+json", strings.NewReader(cloudEvent("evt-1", "order-1")))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("delivery %d: status %d, want 200", i+1, s)
		}
	}
	if got := count(t, db, "shipments"); got != 1 {
		t.Errorf("%d shipments, want 1", got)
	}
}
