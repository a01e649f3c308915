package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// backend is a database the consumer runs on in these tests.
type backend struct {
	name string
	dsn  func(t *testing.T) string // a fresh, empty database (file or schema)
}

// backends: SQLite always; PostgreSQL from REDELIVER_TEST_POSTGRES. Under
// CI=true a missing PostgreSQL fails the test instead of skipping it.
func backends(t *testing.T) []backend {
	bs := []backend{{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "consumer.db") }}}
	if pg := postgresDSN(t); pg != "" {
		bs = append(bs, backend{"postgres", func(t *testing.T) string { return freshSchema(t, pg) }})
	}
	return bs
}

func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("REDELIVER_TEST_POSTGRES")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but REDELIVER_TEST_POSTGRES is not set: the PostgreSQL cases of the example consumer cannot run")
		}
		t.Log("PostgreSQL cases skipped: set REDELIVER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them")
	}
	return dsn
}

// freshSchema returns dsn with search_path set to a new schema, dropped
// when the test ends.
func freshSchema(t testing.TB, dsn string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "example_consumer_" + hex.EncodeToString(b[:])
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	return u.String()
}

// newConsumer opens a consumer on dsn, serves it with httptest, and
// returns both.
func newConsumer(t *testing.T, dsn string, f flaw, secret []byte) (*consumer, *httptest.Server) {
	t.Helper()
	st, err := openStore(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{store: st, flaw: f, window: sleepFor(0), secret: secret, idHeader: "Idempotency-Key", log: io.Discard}
	srv := httptest.NewServer(c.routes())
	t.Cleanup(func() {
		srv.Close()
		c.background.Wait()
		st.close()
	})
	return c, srv
}

func (c *consumer) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := c.store.db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func cloudEvent(id, order string, amount int) string {
	return fmt.Sprintf(`{"specversion":"1.0","id":%q,"source":"/orders","type":"order.paid","datacontenttype":"application/json","data":{"orderId":%q,"amount":%d}}`, id, order, amount)
}

// post sends a structured CloudEvent and returns the status.
func post(t *testing.T, srv *httptest.Server, id, order string, amount int) int {
	t.Helper()
	resp, err := http.Post(srv.URL+"/events", "application/cloudevents+json", strings.NewReader(cloudEvent(id, order, amount)))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func sign(key []byte, id, ts, body string) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TestModes sends one event in each wire mode, well and badly formed.
func TestModes(t *testing.T) {
	defer parallel(t)()
	key := []byte("0123456789abcdef0123456789abcdef")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	webhookBody := `{"type":"order.paid","timestamp":"2026-01-01T00:00:00Z","data":{"orderId":"O-1","amount":10}}`
	tests := []struct {
		name     string
		secret   string // --secret-env's value; "" = none
		headers  map[string]string
		body     string
		status   int
		payments int
	}{
		{"structured", "", map[string]string{"Content-Type": "application/cloudevents+json; charset=utf-8"}, cloudEvent("e1", "O-1", 10), 200, 1},
		{"binary", "", map[string]string{"ce-specversion": "1.0", "ce-id": "e1", "ce-source": "/orders", "ce-type": "order.paid", "Content-Type": "application/json"}, `{"orderId":"O-1","amount":10}`, 200, 1},
		{"raw", "", map[string]string{"Idempotency-Key": "e1", "Content-Type": "application/json"}, `{"orderId":"O-1","amount":10}`, 200, 1},
		{"standard webhooks", secret, map[string]string{"webhook-id": "e1", "webhook-timestamp": now, "webhook-signature": "v1,bm90IGl0 " + sign(key, "e1", now, webhookBody)}, webhookBody, 200, 1},
		{"standard webhooks, raw secret", "s3cret", map[string]string{"webhook-id": "e1", "webhook-timestamp": now, "webhook-signature": sign([]byte("s3cret"), "e1", now, webhookBody)}, webhookBody, 200, 1},
		{"standard webhooks, wrong signature", secret, map[string]string{"webhook-id": "e1", "webhook-timestamp": now, "webhook-signature": sign([]byte("other"), "e1", now, webhookBody)}, webhookBody, 401, 0},
		{"standard webhooks, signed for another id", secret, map[string]string{"webhook-id": "e2", "webhook-timestamp": now, "webhook-signature": sign(key, "e1", now, webhookBody)}, webhookBody, 401, 0},
		{"standard webhooks, stale timestamp", secret, map[string]string{"webhook-id": "e1", "webhook-timestamp": stale, "webhook-signature": sign(key, "e1", stale, webhookBody)}, webhookBody, 401, 0},
		{"standard webhooks, no secret to verify with", "", map[string]string{"webhook-id": "e1", "webhook-timestamp": now, "webhook-signature": sign(key, "e1", now, webhookBody)}, webhookBody, 401, 0},
		{"structured without id", "", map[string]string{"Content-Type": "application/cloudevents+json"}, `{"specversion":"1.0","data":{"orderId":"O-1"}}`, 400, 0},
		{"structured, not JSON", "", map[string]string{"Content-Type": "application/cloudevents+json"}, `{"specversion":`, 400, 0},
		{"structured, wrong specversion", "", map[string]string{"Content-Type": "application/cloudevents+json"}, `{"specversion":"0.3","id":"e1","data":{"orderId":"O-1"}}`, 400, 0},
		{"binary without orderId", "", map[string]string{"ce-specversion": "1.0", "ce-id": "e1"}, `{"amount":10}`, 400, 0},
		{"raw without id header", "", map[string]string{"Content-Type": "application/json"}, `{"orderId":"O-1","amount":10}`, 400, 0},
		{"raw, amount not a number", "", map[string]string{"Idempotency-Key": "e1"}, `{"orderId":"O-1","amount":"ten"}`, 400, 0},
	}
	for _, b := range backends(t) {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				var sk []byte
				if tt.secret != "" {
					var err error
					if sk, err = webhookKey(tt.secret); err != nil {
						t.Fatal(err)
					}
				}
				c, srv := newConsumer(t, b.dsn(t), flawSafe, sk)
				req, _ := http.NewRequest("POST", srv.URL+"/events", strings.NewReader(tt.body))
				for k, v := range tt.headers {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tt.status {
					t.Errorf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
				}
				if got := c.count(t, "payments"); got != tt.payments {
					t.Errorf("%d payments, want %d", got, tt.payments)
				}
			})
		}
	}
}

// TestRedeliveries: what the safe consumer answers to the deliveries a
// broker makes, in order.
func TestRedeliveries(t *testing.T) {
	defer parallel(t)()
	type delivery struct {
		id, order string
		amount    int
		status    int
	}
	tests := []struct {
		name              string
		deliveries        []delivery
		payments, charges int
	}{
		{"once", []delivery{{"e1", "O-1", 10, 200}}, 1, 1},
		{"twice", []delivery{{"e1", "O-1", 10, 200}, {"e1", "O-1", 10, 200}}, 1, 1},
		{"same id, another order", []delivery{{"e1", "O-1", 10, 200}, {"e1", "O-2", 10, 409}}, 1, 1},
		{"same id, another amount", []delivery{{"e1", "O-1", 10, 200}, {"e1", "O-1", 20, 409}}, 1, 1},
		{"new id, same order, another amount: the provider's key conflicts", []delivery{{"e1", "O-1", 10, 200}, {"e2", "O-1", 20, 409}}, 1, 1},
		{"two orders", []delivery{{"e1", "O-1", 10, 200}, {"e2", "O-2", 10, 200}, {"e1", "O-1", 10, 200}}, 2, 2},
	}
	for _, b := range backends(t) {
		for _, tt := range tests {
			t.Run(b.name+"/"+tt.name, func(t *testing.T) {
				c, srv := newConsumer(t, b.dsn(t), flawSafe, nil)
				for i, d := range tt.deliveries {
					if got := post(t, srv, d.id, d.order, d.amount); got != d.status {
						t.Errorf("delivery %d (%s %s %d): status %d, want %d", i+1, d.id, d.order, d.amount, got, d.status)
					}
				}
				if got := c.count(t, "payments"); got != tt.payments {
					t.Errorf("%d payments, want %d", got, tt.payments)
				}
				if got := c.count(t, "provider_charges"); got != tt.charges {
					t.Errorf("%d provider charges, want %d", got, tt.charges)
				}
			})
		}
	}
}

var errCrash = errors.New("crashed in the window")

// TestFlawWindows opens each flaw's window on purpose: two deliveries in
// a row, two at once (both held in the window until both are there), and
// a crash in the window (the delivery stops there, unanswered, as a kill
// would leave it) followed by the broker's redelivery. The safe consumer
// makes one payment and one charge every time; each flaw breaks exactly
// where it should.
func TestFlawWindows(t *testing.T) {
	defer parallel(t)()
	tests := []struct {
		flaw              flaw
		fault             string // twice | concurrent | crash
		payments, charges int
	}{
		{flawSafe, "twice", 1, 1},
		{flawSafe, "concurrent", 1, 1},
		{flawSafe, "crash", 1, 1},
		{flawNone, "twice", 2, 1},
		{flawNone, "concurrent", 2, 1},
		{flawCheckThenAct, "twice", 1, 1},
		{flawCheckThenAct, "concurrent", 2, 1},
		{flawCheckThenAct, "crash", 1, 1},
		{flawMarkerAfterEffect, "twice", 1, 1},
		{flawMarkerAfterEffect, "crash", 2, 1},
		{flawExternalWithoutKey, "twice", 1, 1},
		{flawExternalWithoutKey, "concurrent", 1, 2},
		{flawExternalWithoutKey, "crash", 1, 2},
		{flawAckBeforeCommit, "twice", 1, 1},
		{flawAckBeforeCommit, "crash", 0, 1}, // acked with 202, then lost: no redelivery
	}
	for _, b := range backends(t) {
		for _, tt := range tests {
			name := strings.TrimPrefix(tt.flaw.String(), "flaw: ")
			t.Run(b.name+"/"+name+"/"+tt.fault, func(t *testing.T) {
				c, srv := newConsumer(t, b.dsn(t), tt.flaw, nil)
				switch tt.fault {
				case "twice":
					for i := 0; i < 2; i++ {
						if got := post(t, srv, "e1", "O-1", 10); got/100 != 2 {
							t.Fatalf("delivery %d: status %d, want 2xx", i+1, got)
						}
						c.background.Wait()
					}
				case "concurrent":
					c.window = barrier(2)
					var wg sync.WaitGroup
					for i := 0; i < 2; i++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							post(t, srv, "e1", "O-1", 10)
						}()
					}
					wg.Wait()
				case "crash":
					var once sync.Once
					c.window = func() error {
						err := error(nil)
						once.Do(func() { err = errCrash })
						return err
					}
					status := post(t, srv, "e1", "O-1", 10)
					c.background.Wait()
					if status/100 != 2 { // no ack: the broker redelivers
						if got := post(t, srv, "e1", "O-1", 10); got/100 != 2 {
							t.Fatalf("redelivery: status %d, want 2xx", got)
						}
					}
				}
				c.background.Wait()
				if got := c.count(t, "payments"); got != tt.payments {
					t.Errorf("%d payments, want %d", got, tt.payments)
				}
				if got := c.count(t, "provider_charges"); got != tt.charges {
					t.Errorf("%d provider charges, want %d", got, tt.charges)
				}
			})
		}
	}
}

// barrier holds each caller until n have arrived (or a minute passed, so
// a consumer that lets only one through fails its counts, not the run).
func barrier(n int) func() error {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return func() error {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(time.Minute):
		}
		return nil
	}
}

// TestAckBeforeCommit: the answer is out while the payment is not yet
// written.
func TestAckBeforeCommit(t *testing.T) {
	defer parallel(t)()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c, srv := newConsumer(t, b.dsn(t), flawAckBeforeCommit, nil)
			release := make(chan struct{})
			c.window = func() error { <-release; return nil }
			if got := post(t, srv, "e1", "O-1", 10); got != http.StatusAccepted {
				t.Fatalf("status %d, want 202", got)
			}
			if got := c.count(t, "payments"); got != 0 {
				t.Errorf("%d payments while the work is held, want 0", got)
			}
			close(release)
			c.background.Wait()
			if got := c.count(t, "payments"); got != 1 {
				t.Errorf("%d payments after the work, want 1", got)
			}
		})
	}
}

// TestExec runs --exec through run(), as redeliver's exec channel does.
func TestExec(t *testing.T) {
	defer parallel(t)()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			dsn := b.dsn(t)
			steps := []struct {
				name  string
				args  []string
				stdin string
				exit  int
				out   string
			}{
				{"processed", nil, cloudEvent("e1", "O-1", 10), exitAcked, `"outcome":"processed"`},
				{"duplicate", nil, cloudEvent("e1", "O-1", 10), exitAcked, `"outcome":"duplicate"`},
				{"conflict", nil, cloudEvent("e1", "O-1", 99), exitConflict, "conflict"},
				{"rejected", nil, `{"specversion":"1.0","id":"e3","data":{}}`, exitRejected, "data.orderId is missing"},
				{"not JSON", nil, `nope`, exitRejected, "not a CloudEvent"},
				{"none makes a second payment", []string{"--flaw", "none"}, cloudEvent("e1", "O-1", 10), exitAcked, `"outcome":"processed"`},
			}
			for _, s := range steps {
				var out, errb bytes.Buffer
				args := append([]string{"--exec", "--db", dsn}, s.args...)
				exit := run(context.Background(), args, strings.NewReader(s.stdin), &out, &errb)
				if exit != s.exit {
					t.Errorf("%s: exit %d, want %d (stderr %q)", s.name, exit, s.exit, errb.String())
				}
				if !strings.Contains(out.String()+errb.String(), s.out) {
					t.Errorf("%s: output %q %q, want it to contain %q", s.name, out.String(), errb.String(), s.out)
				}
			}
			st, err := openStore(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			c := &consumer{store: st}
			if got := c.count(t, "payments"); got != 2 {
				t.Errorf("%d payments, want 2", got)
			}
		})
	}
}

// TestUsage: a mistake on the command line is one line and exit 2.
func TestUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "c.db")
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no db", []string{"--listen", "127.0.0.1:0"}, nil, "--db is required"},
		{"neither mode", []string{"--db", db}, nil, "exactly one of --listen ADDR, --exec, --nats URL, --amqp URL and --kafka BROKERS"},
		{"both modes", []string{"--db", db, "--exec", "--listen", ":0"}, nil, "exactly one of --listen ADDR, --exec, --nats URL, --amqp URL and --kafka BROKERS"},
		{"unknown flaw", []string{"--db", db, "--exec", "--flaw", "sloppy"}, nil, `--flaw "sloppy" is not one of`},
		{"ack-before-commit in exec", []string{"--db", db, "--exec", "--flaw", "ack-before-commit"}, nil, "needs --listen"},
		{"negative work", []string{"--db", db, "--exec", "--work", "-1s"}, nil, "--work must not be negative"},
		{"stray argument", []string{"--db", db, "--exec", "extra"}, nil, `unexpected argument "extra"`},
		{"secret unset", []string{"--db", db, "--exec", "--secret-env", "EXAMPLE_CONSUMER_UNSET_SECRET"}, nil, "EXAMPLE_CONSUMER_UNSET_SECRET, which is not set"},
		{"secret not base64", []string{"--db", db, "--exec", "--secret-env", "EXAMPLE_CONSUMER_BAD_SECRET"}, map[string]string{"EXAMPLE_CONSUMER_BAD_SECRET": "whsec_!!"}, "not base64"},
		{"memory db", []string{"--db", ":memory:", "--exec"}, nil, "needs a SQLite file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var out, errb bytes.Buffer
			exit := run(context.Background(), tt.args, strings.NewReader(""), &out, &errb)
			want := exitUsage
			if tt.name == "memory db" {
				want = exitTempFail
			}
			if exit != want {
				t.Errorf("exit %d, want %d (stderr %q)", exit, want, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr %q, want it to contain %q", errb.String(), tt.want)
			}
		})
	}
}

// TestResultJSON: the answer body names the outcome and the payment.
func TestResultJSON(t *testing.T) {
	c, srv := newConsumer(t, filepath.Join(t.TempDir(), "c.db"), flawSafe, nil)
	_ = c
	var got [2]result
	for i := range got {
		resp, err := http.Post(srv.URL, "application/cloudevents+json", strings.NewReader(cloudEvent("e1", "O-1", 10)))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.NewDecoder(resp.Body).Decode(&got[i]); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got[0].Outcome != "processed" || got[1].Outcome != "duplicate" || got[0].PaymentID == 0 || got[1].PaymentID != got[0].PaymentID {
		t.Errorf("answers %+v, want processed then duplicate with the same payment id", got)
	}
}
