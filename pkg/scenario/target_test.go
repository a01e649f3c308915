package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const targetFile = `version: 1
name: payments service
target:
  http:
    url: http://127.0.0.1:${REDELIVER_TEST_PORT:-8080}/events
    headers: {X-Tenant: acme}
    timeout: 2s
    mode: standard-webhooks
    secret_env: REDELIVER_TEST_SECRET
  start:
    command: [bin/consumer, --listen, "127.0.0.1:${REDELIVER_TEST_PORT:-8080}", --db, "${REDELIVER_TEST_DB}"]
    env: {K: V}
    ready: {stdout: listening}
    ready_timeout: 3s
effects:
  db: "${REDELIVER_TEST_DB}"
  reset: ["DELETE FROM payments"]
  table: payments
  key: order_id
  event: event_id
  key_of: "{data.orderId}"
  ignore_columns: [updated_at, seen_at]
checks:
  - name: crash then redelivery
    steps:
      - deliver: {id: evt-2, data: {orderId: O-2, amount: 10}}
        crash: {after: 5ms}
        delay: 1ms
      - deliver: {id: evt-2, data: {orderId: O-2, amount: 10}}
        drop: response
        expect: acked
      - deliver: {id: evt-3, data: {orderId: O-3}}
        crash: sweep
        expect: {status: 201}
      - deliver: {id: evt-4, data: {orderId: O-4}}
        concurrent: 4
    expect:
      effects: {O-2: 1}
      rows: {payments: 1}
`

func TestLoadTarget(t *testing.T) {
	t.Setenv("REDELIVER_TEST_DB", "/tmp/x.db")
	t.Setenv("REDELIVER_TEST_SECRET", "whsec_c2VjcmV0")
	s, err := Load("t.yaml", []byte(targetFile))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	h := s.Target.HTTP
	if h == nil || h.URL != "http://127.0.0.1:8080/events" || h.Method != "POST" || h.Timeout != 2*time.Second || h.Mode != ModeStandardWebhooks || h.Secret != "whsec_c2VjcmV0" || h.Headers["X-Tenant"] != "acme" {
		t.Errorf("http = %+v", h)
	}
	st := s.Target.Start
	if got := strings.Join(st.Command, " "); got != "bin/consumer --listen 127.0.0.1:8080 --db /tmp/x.db" {
		t.Errorf("start command = %q", got)
	}
	if st.ReadyLine != "listening" || st.ReadyTimeout != 3*time.Second {
		t.Errorf("start = %+v", st)
	}
	e := s.Effects
	if e.DB != "/tmp/x.db" || e.Table != "payments" || e.Key != "order_id" || e.Event != "event_id" || e.KeyOf.String() != "{data.orderId}" || len(e.Reset) != 1 || strings.Join(e.IgnoreColumns, " ") != "updated_at seen_at" {
		t.Errorf("effects = %+v", e)
	}
	steps := s.Checks[0].Steps
	if c := steps[0].Crash; c == nil || c.Kind != CrashAfter || c.After != 5*time.Millisecond || steps[0].Delay != time.Millisecond {
		t.Errorf("step 1 = %+v", steps[0])
	}
	if !steps[1].Drop || steps[1].Expect.Answer != "acked" {
		t.Errorf("step 2 = %+v", steps[1])
	}
	if steps[2].Crash.Kind != CrashSweep || steps[2].Expect.Status != 201 {
		t.Errorf("step 3 = %+v", steps[2])
	}
	if x := s.Checks[0].Expect; len(x.Effects) != 1 || x.Effects[0].Key != "O-2" || x.Effects[0].N != 1 || len(x.Rows) != 1 {
		t.Errorf("check expect = %+v", x)
	}
}

// TestCommandShown: a command's variables whose names hold a secret are
// masked in what messages show, and only there.
func TestCommandShown(t *testing.T) {
	t.Setenv("REDELIVER_TEST_TOKEN", "s3cret")
	t.Setenv("REDELIVER_TEST_PORT", "8080")
	for _, tt := range []struct{ channel, command, shown string }{
		{"exec", `[bin/consumer, "${REDELIVER_TEST_TOKEN}", "--port=${REDELIVER_TEST_PORT}"]`, "bin/consumer xxxxx --port=8080"},
		{"start", `[bin/consumer, "--auth=${REDELIVER_TEST_TOKEN:-none}", "${REDELIVER_TEST_UNSET_TOKEN:-dflt}"]`, "bin/consumer --auth=xxxxx dflt"},
	} {
		t.Run(tt.channel, func(t *testing.T) {
			target := "  exec: {command: " + tt.command + "}\n"
			if tt.channel == "start" {
				target = "  http: {url: \"http://127.0.0.1:8080/events\"}\n  start: {command: " + tt.command + ", ready: {stdout: up}}\n"
			}
			src := "version: 1\ntarget:\n" + target + "effects: {db: x.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n"
			f, err := LoadTarget("t.yaml", []byte(src))
			if err != nil {
				t.Fatalf("LoadTarget: %v", err)
			}
			command, shown := []string(nil), []string(nil)
			if f.Target.Exec != nil {
				command, shown = f.Target.Exec.Command, f.Target.Exec.Shown
			} else {
				command, shown = f.Target.Start.Command, f.Target.Start.Shown
			}
			if got := strings.Join(shown, " "); got != tt.shown {
				t.Errorf("shown = %q, want %q", got, tt.shown)
			}
			if strings.Contains(strings.Join(command, " "), "xxxxx") || !strings.Contains(strings.Join(command, " "), "s3cret") && tt.channel == "exec" {
				t.Errorf("the command itself changed: %q", command)
			}
		})
	}
}

// TestSecrets: a file's secrets are known by value — what each secret
// ${VAR} expanded to, the passwords of its URLs and DSNs, secret-named
// env and header values — and nothing else is.
func TestSecrets(t *testing.T) {
	t.Setenv("REDELIVER_TEST_DB_PASSWORD", "hunter2")
	t.Setenv("REDELIVER_TEST_PORT", "8080")
	src := `version: 1
target:
  http: {url: "http://alice:s3cretHTTP@127.0.0.1:${REDELIVER_TEST_PORT}/e", headers: {Authorization: "Bearer t0kenHDR", X-Trace: plain1}}
  start:
    command: [sh, -c, "...", "${REDELIVER_TEST_DB_PASSWORD}", --port, "${REDELIVER_TEST_PORT}"]
    env: {API_TOKEN: s3cretENV, LOG_LEVEL: debug9}
    ready: {stdout: up}
effects: {db: "postgres://app:s3cretDB@127.0.0.1:1/app", table: payments, key: order_id, key_of: "{data.orderId}"}
`
	f, err := LoadTarget("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("LoadTarget: %v", err)
	}
	got := strings.Join(f.Secrets, " ")
	for _, want := range []string{"hunter2", "s3cretHTTP", "Bearer t0kenHDR", "t0kenHDR", "s3cretENV", "s3cretDB"} {
		if !slices.Contains(f.Secrets, want) {
			t.Errorf("Secrets = %q, want %q among them", got, want)
		}
	}
	for _, not := range []string{"8080", "debug9", "plain1", "alice", "app"} {
		if slices.Contains(f.Secrets, not) {
			t.Errorf("Secrets = %q holds %q, which is no secret", got, not)
		}
	}
}

func TestLoadTargetErrors(t *testing.T) {
	t.Setenv("REDELIVER_TEST_SECRET", "whsec_c2VjcmV0")
	const effects = "effects: {db: x.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n"
	const checks = "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	const http = "target:\n  http: {url: \"http://127.0.0.1:1/e\"}\n"
	const amqpT = "target: {amqp: {url: \"amqp://a:5672/\", queue: q}}\n"
	tests := []struct{ name, src, want string }{
		{"unknown channel", "version: 1\ntarget:\n  grpc: {url: x}\n" + effects + checks, "f.yaml:3:3: unknown field \"grpc\" in the target; expected one of http, exec, nats, amqp, kafka, start"},
		{"no channel", "version: 1\ntarget:\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\"}\n" + effects + checks, "f.yaml:3:3: the target names no channel"},
		{"two channels", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  exec: {command: [a]}\n" + effects + checks, "f.yaml:4:3: the target has two channels; choose one of http, exec, nats, amqp or kafka"},
		{"handler and target", "version: 1\nhandler: {strategy: none}\n" + http + effects + checks, "f.yaml:2:1: a scenario tests either the built-in handler or your own target, not both"},
		{"target without effects", "version: 1\n" + http + checks, "f.yaml:1:1: a target needs effects"},
		{"effects without target", "version: 1\n" + effects + checks, "f.yaml:2:1: effects describes a target's database"},
		{"crash without start", "version: 1\n" + http + effects + checks + "        crash: {after: 5ms}\n", "f.yaml:9:16: crash kills the consumer redeliver started, and this target has no start"},
		{"bad crash", "version: 1\n" + http + effects + checks + "        crash: often\n", "f.yaml:9:16: crash must be {after: DURATION}, random, sweep, statements, or {before: STATEMENT} / {after: STATEMENT}, not \"often\""},
		{"statement crash without proxy", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\"}\n" + effects + checks + "        crash: {before: \"INSERT INTO payments\"}\n", "f.yaml:10:16: crash: {before: INSERT INTO payments} lands at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects"},
		{"statements crash without proxy", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\"}\n" + effects + checks + "        crash: statements\n", "f.yaml:10:16: crash: statements lands at the consumer's SQL statements"},
		{"crash before nothing", "version: 1\n" + http + effects + checks + "        crash: {before: \" \"}\n", "f.yaml:9:25: crash before names no statement"},
		{"crash before a duration", "version: 1\n" + http + effects + checks + "        crash: {before: 5ms}\n", "f.yaml:9:25: crash before takes a statement's leading words, such as \"INSERT INTO payments\", not a duration (5ms): to kill the consumer a time after the delivery was sent, write crash: {after: 5ms}"},
		{"crash before a number", "version: 1\n" + http + effects + checks + "        crash: {before: 2}\n", "f.yaml:9:25: crash before takes a statement's leading words, such as \"INSERT INTO payments\", not a duration (2)"},
		{"crash before and after", "version: 1\n" + http + effects + checks + "        crash: {before: commit, after: commit}\n", "f.yaml:9:16: crash takes before or after, not both"},
		{"jdbc url without proxy", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [java, -jar, c.jar, \"${REDELIVER_JDBC_URL}\"], ready: \"tcp://127.0.0.1:1\"}\n" + effects + checks, "f.yaml:4:40: ${REDELIVER_JDBC_URL} is the database address through redeliver's proxy; add proxy: true to effects"},
		{"db url without proxy", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\", env: {DATABASE_URL: \"${REDELIVER_DB_URL}\"}}\n" + effects + checks, "f.yaml:4:73: ${REDELIVER_DB_URL} is the database address through redeliver's proxy; add proxy: true to effects"},
		{"proxy without start", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" + checks, "f.yaml:4:59: proxy: true relays the connections of a consumer redeliver starts, and this target has no start"},
		{"statement crash with times", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\", env: {D: \"${REDELIVER_DB_URL}\"}}\n" + "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" + checks + "        times: 2\n        crash: statements\n", "f.yaml:9:9: a step that crashes at a statement delivers once"},
		{"ignore_columns not a list", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", ignore_columns: updated_at}\n" + checks, "f.yaml:4:75: ignore_columns must be a list of column names such as [updated_at], not "},
		{"ignore_columns not a name", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", ignore_columns: [\"a b\"]}\n" + checks, "f.yaml:4:76: an ignore_columns entry must be a name of letters, digits and underscores, not \"a b\""},
		{"ignore_columns twice", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", ignore_columns: [a, A]}\n" + checks, "f.yaml:4:79: ignore_columns names A twice"},
		{"key_of unknown placeholder", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"{orderId}\"}\n" + checks, "f.yaml:4:47: key_of uses unknown placeholder {orderId}"},
		{"unset variable", "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:${REDELIVER_UNSET_PORT}/e\"}\n" + effects + checks, "f.yaml:3:15: url: the environment variable REDELIVER_UNSET_PORT is not set"},
		{"bad url", "version: 1\ntarget:\n  http: {url: \"127.0.0.1:8080\"}\n" + effects + checks, "f.yaml:3:15: url must be an http:// or https:// URL"},
		{"placeholder url", "version: 1\ntarget:\n  http: {url: \"<fill in: your URL>\"}\n" + effects + checks, "f.yaml:3:15: url is still the placeholder <fill in: your URL>: replace it with your own value"},
		{"placeholder in a command", "version: 1\ntarget:\n  exec: {command: [a, \"--db=<fill in: a file>\"]}\n" + effects + checks, "f.yaml:3:23: command entry is still the placeholder <fill in: a file>: replace it with your own value"},
		{"placeholder default", "version: 1\n" + http + "effects: {db: \"${REDELIVER_UNSET_DB:-<fill in: the database>}\", table: p, key: k, key_of: \"{id}\"}\n" + checks, "f.yaml:4:15: db is still the placeholder <fill in: the database>: replace it with your own value, or set REDELIVER_UNSET_DB"},
		{"placeholder table", "version: 1\n" + http + "effects: {db: x.db, table: \"<fill in: the table>\", key: k, key_of: \"{id}\"}\n" + checks, "f.yaml:4:28: table is still the placeholder <fill in: the table>"},
		{"placeholder reset", "version: 1\n" + http + "effects: {db: x.db, reset: [\"<fill in: DELETE FROM t>\"], table: p, key: k, key_of: \"{id}\"}\n" + checks, "f.yaml:4:29: reset statement is still the placeholder <fill in: DELETE FROM t>"},
		{"placeholder key_of", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, key_of: \"<fill in: {data.id}>\"}\n" + checks, "f.yaml:4:47: key_of is still the placeholder <fill in: {data.id}>"},
		{"unknown mode", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", mode: grpc}\n" + effects + checks, "f.yaml:3:36: unknown mode \"grpc\"; expected one of structured, binary, raw, standard-webhooks"},
		{"webhooks without secret", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", mode: standard-webhooks}\n" + effects + checks, "f.yaml:3:36: mode standard-webhooks signs every delivery"},
		{"secret unset", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", mode: standard-webhooks, secret_env: REDELIVER_UNSET_SECRET}\n" + effects + checks, "f.yaml:3:67: the environment variable REDELIVER_UNSET_SECRET (secret_env) is not set"},
		{"bad timeout", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", timeout: -1s}\n" + effects + checks, "f.yaml:3:39: timeout must be a positive duration"},
		{"bad ready", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"localhost\"}\n" + effects + checks, "f.yaml:4:32: ready must be an HTTP URL"},
		{"start without ready", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a]}\n" + effects + checks, "f.yaml:4:10: target start needs ready"},
		{"exec without command", "version: 1\ntarget:\n  exec: {timeout: 1s}\n" + effects + checks, "f.yaml:3:9: target exec needs command"},
		{"empty command", "version: 1\ntarget:\n  exec: {command: []}\n" + effects + checks, "f.yaml:3:19: command is empty"},
		{"unknown db", "version: 1\n" + http + "effects: {db: \"mongodb://x\", table: p, key: k, key_of: \"{id}\"}\n" + checks, "f.yaml:4:15: db \"mongodb://x\": unknown database \"mongodb\""},
		{"table and query", "version: 1\n" + http + "effects: {db: x.db, table: p, key: k, query: \"SELECT 1 AS key\", key_of: \"{id}\"}\n" + checks, "f.yaml:4:46: effects takes table and key, or query, not both"},
		{"query of two statements", "version: 1\n" + http + "effects: {db: x.db, query: \"SELECT k AS key FROM p; COMMIT; DELETE FROM p\", key_of: \"{id}\"}\n" + checks, "f.yaml:4:28: query must be one statement, and a ; is followed by more (\" COMMIT; DELETE FROM p\"): a second statement may write where the first only reads"},
		{"query with a ; in a comment", "version: 1\n" + http + "effects: {db: x.db, query: \"SELECT k AS key FROM p -- ;\\nDELETE FROM p\", key_of: \"{id}\"}\n" + checks, "f.yaml:4:28: query must be one statement, and a ; is followed by more"},
		{"header name with a space", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", headers: {\"X Api\": v}}\n" + effects + checks, "f.yaml:3:40: header name \"X Api\" is not one HTTP can carry"},
		{"header value with a newline", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", headers: {X-Api-Key: \"s3cret\\nx\"}}\n" + effects + checks, "f.yaml:3:51: the value of header X-Api-Key holds a control character"},
		{"event header value with a NUL", "version: 1\n" + http + effects + "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, headers: {X-Tenant: \"a\\u0000\"}, data: {orderId: o}}\n", "f.yaml:8:46: the value of header X-Tenant holds a control character"},
		{"event header name with a colon", "version: 1\n" + http + effects + "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, headers: {\"a:b\": c}, data: {orderId: o}}\n", "f.yaml:8:36: header name \"a:b\" is not one HTTP can carry"},
		{"binary mode id with a newline", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", mode: binary}\n" + effects + "checks:\n  - name: a\n    steps:\n      - deliver: {id: \"e\\n::error::x\", data: {orderId: o}}\n", "f.yaml:8:23: id holds a control character (a newline, a NUL), and mode binary carries it in a header (ce-id), which HTTP cannot"},
		{"raw mode id with a NUL", "version: 1\ntarget:\n  http: {url: \"http://a:1/\", mode: raw}\n" + effects + "checks:\n  - name: a\n    steps:\n      - deliver: {id: \"e\\u0000\", data: {orderId: o}}\n", "f.yaml:8:23: id holds a control character (a newline, a NUL), and mode raw carries it in a header (Idempotency-Key), which HTTP cannot"},
		{"table without key", "version: 1\n" + http + "effects: {db: x.db, table: p, key_of: \"{id}\"}\n" + checks, "f.yaml:4:28: effects needs key"},
		{"bad table name", "version: 1\n" + http + "effects: {db: x.db, table: \"p; drop\", key: k, key_of: \"{id}\"}\n" + checks, "f.yaml:4:28: table must be a name of letters"},
		{"fail in target mode", "version: 1\n" + http + effects + checks + "        fail: after-marker\n", "f.yaml:8:9: fail is for the built-in handler"},
		{"crash in handler mode", "version: 1\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n        crash: random\n", "f.yaml:6:9: crash is a fault from outside for a target"},
		{"outcome word in target mode", "version: 1\n" + http + effects + checks + "        expect: processed\n", "f.yaml:9:17: unknown answer \"processed\""},
		{"drop other", "version: 1\n" + http + effects + checks + "        drop: request\n", "f.yaml:9:15: drop must be response"},
		{"effects in handler mode", "version: 1\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n    expect: {effects: {o: 1}}\n", "f.yaml:6:14: effects counts a target's effect rows"},
		{"processed in target mode", "version: 1\n" + http + effects + checks + "      - expect: {processed: [e]}\n", "f.yaml:9:17: processed and not_processed read the built-in handler's markers"},
		{"status on exec", "version: 1\ntarget:\n  exec: {command: [a]}\n" + effects + checks + "        expect: {status: 200}\n", "f.yaml:9:17: status is an HTTP status, and this target is exec"},
		{"advance in target mode", "version: 1\n" + http + effects + checks + "      - advance: 1h\n", "f.yaml:9:9: advance moves the built-in handler's clock"},
		{"crash with concurrent", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: \"tcp://127.0.0.1:1\"}\n" + effects + checks + "        concurrent: 2\n        crash: random\n", "f.yaml:9:9: a step takes crash or concurrent, not both"},
		{"nats without durable", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: \"s.{type}\"}\n" + effects + checks, "f.yaml:3:9: target nats needs durable"},
		{"nats bad url", "version: 1\ntarget:\n  nats: {url: \"http://a:4222\", stream: S, subject: s, durable: d}\n" + effects + checks, "f.yaml:3:15: url must be a nats:// URL"},
		{"nats empty subject", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: \"\", durable: d}\n" + effects + checks, "f.yaml:3:52: subject is empty"},
		{"nats bad subject template", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: \"s.{type\", durable: d}\n" + effects + checks, "f.yaml:3:52: subject: placeholder at byte 3 is not closed"},
		{"nats create not bool", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d, create: yes please}\n" + effects + checks, "f.yaml:3:75: create must be true or false"},
		{"nats unknown field", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d, queue: q}\n" + effects + checks, "f.yaml:3:67: unknown field \"queue\" in target nats"},
		{"nats ack_wait too short", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d, ack_wait: 1ns}\n" + effects + checks, "f.yaml:3:77: ack_wait must be at least 100ms, not 1ns"},
		{"nats ack_wait of zero", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d, ack_wait: 0s}\n" + effects + checks, "f.yaml:3:77: ack_wait must be a positive duration"},
		{"nats bad mode", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d, mode: raw}\n" + effects + checks, "f.yaml:3:73: unknown mode \"raw\"; expected binary or structured"},
		{"kafka without group", "version: 1\ntarget:\n  kafka: {brokers: [\"127.0.0.1:9092\"], topic: orders}\n" + effects + checks, "f.yaml:3:10: target kafka needs group: the consumer group"},
		{"kafka without brokers", "version: 1\ntarget:\n  kafka: {topic: orders, group: g}\n" + effects + checks, "f.yaml:3:10: target kafka needs brokers"},
		{"kafka broker with a scheme", "version: 1\ntarget:\n  kafka: {brokers: [\"kafka://h:9092\"], topic: orders, group: g}\n" + effects + checks, "f.yaml:3:21: brokers entry \"kafka://h:9092\" must be HOST:PORT"},
		{"kafka broker without a port", "version: 1\ntarget:\n  kafka: {brokers: [h], topic: orders, group: g}\n" + effects + checks, "f.yaml:3:21: brokers entry \"h\" must be HOST:PORT"},
		{"kafka broker port out of range", "version: 1\ntarget:\n  kafka: {brokers: [\"h:1,h:70000\"], topic: orders, group: g}\n" + effects + checks, "f.yaml:3:21: brokers entry \"h:70000\" has no port from 1 to 65535"},
		{"kafka empty brokers", "version: 1\ntarget:\n  kafka: {brokers: [], topic: orders, group: g}\n" + effects + checks, "f.yaml:3:20: brokers is empty"},
		{"kafka bad topic", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: \"orders/eu\", group: g}\n" + effects + checks, "f.yaml:3:39: topic \"orders/eu\" is not a Kafka topic name"},
		{"kafka partitions without create", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g, partitions: 3}\n" + effects + checks, "f.yaml:3:10: target kafka sets partitions, which only create: true uses"},
		{"kafka partitions zero", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g, create: true, partitions: 0}\n" + effects + checks, "f.yaml:3:78: partitions must be between 1 and 1024, not 0"},
		{"kafka unknown field", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g, queue: q}\n" + effects + checks, "f.yaml:3:52: unknown field \"queue\" in target kafka"},
		{"kafka bad mode", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g, mode: raw}\n" + effects + checks, "f.yaml:3:58: unknown mode \"raw\"; expected binary or structured"},
		{"kafka drop", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g}\n" + effects + checks + "        drop: response\n", "f.yaml:8:9: drop cuts off an answer, and a broker target has none"},
		{"amqp without queue", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\"}\n" + effects + checks, "f.yaml:3:9: target amqp needs queue"},
		{"amqp bad url", "version: 1\ntarget:\n  amqp: {url: \"nats://a:4222\", queue: q}\n" + effects + checks, "f.yaml:3:15: url must be a amqp:// URL"},
		{"amqp exchange without routing key", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\", queue: q, exchange: x}\n" + effects + checks, "f.yaml:3:9: target amqp publishes to exchange x, so it needs routing_key"},
		{"broker and http", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  amqp: {url: \"amqp://a:5672/\", queue: q}\n" + effects + checks, "f.yaml:4:3: the target has two channels"},
		{"broker drop", "version: 1\n" + amqpT + effects + checks + "        drop: response\n", "f.yaml:7:9: drop cuts off an answer, and a broker target has none"},
		{"broker crash without start", "version: 1\n" + amqpT + effects + checks + "        crash: random\n", "f.yaml:7:9: crash kills a consumer instance redeliver started, and this target has no start"},
		{"broker crash sweep", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\", queue: q}\n  start: {command: [a], ready: {stdout: x}, instances: 3}\n" + effects + checks + "        crash: sweep\n", "f.yaml:9:9: crash: sweep waits for an answer, and a broker target has none"},
		{"broker statements without proxy", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\", queue: q}\n  start: {command: [a], ready: {stdout: x}}\n" + effects + checks + "        crash: {before: \"INSERT INTO payments\"}\n", "f.yaml:10:16: crash: {before: INSERT INTO payments} lands at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects"},
		{"broker statements without start", "version: 1\n" + amqpT + effects + checks + "        crash: statements\n", "f.yaml:7:9: crash kills a consumer instance redeliver started, and this target has no start"},
		{"broker statements with externals and no proxy", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\", queue: q}\n  start: {command: [a, \"${PAY_URL}\"], ready: {stdout: x}}\n" + effects + "externals:\n  pay: {http: {}, effect_key: \"{body.orderId}\"}\n" + checks + "        crash: statements\n", "f.yaml:12:16: crash: statements behind a broker lands at the consumer's SQL statements, which redeliver sees only through its proxy"},
		{"instances on http", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], ready: {stdout: x}, instances: 3}\n" + effects + checks, "f.yaml:4:45: instances: 3 needs a broker target (nats, amqp or kafka)"},
		{"instances zero", "version: 1\ntarget:\n  amqp: {url: \"amqp://a:5672/\", queue: q}\n  start: {command: [a], ready: {stdout: x}, instances: 0}\n" + effects + checks, "f.yaml:4:56: instances must be"},
		{"broker concurrent", "version: 1\n" + amqpT + effects + checks + "        concurrent: 2\n", "f.yaml:7:9: concurrent behind a broker is explored at the consumer's SQL statements, which redeliver sees only through its proxy: add proxy: true to effects"},
		{"broker concurrent on kafka with too few partitions", "version: 1\ntarget:\n  kafka: {brokers: [\"h:9092\"], topic: t, group: g, create: true, partitions: 1}\n  start: {command: [a, \"${REDELIVER_DB_URL}\"], ready: {stdout: x}, instances: 2}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" + checks + "        concurrent: 2\n", "f.yaml:9:9: concurrent: 2 behind Kafka produces the 2 copies to 2 partitions held by 2 members of the group, and create makes topic t with partitions: 1: set partitions to 2 or more"},
		{"broker concurrent with fewer instances", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d}\n  start: {command: [a, \"${REDELIVER_DB_URL}\"], ready: {stdout: x}, instances: 2}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" + checks + "        concurrent: 3\n", "f.yaml:9:9: concurrent: 3 behind a broker publishes the event 3 times for 3 started instances to take one copy each, and start has instances: 2: set instances to 3 or more"},
		{"broker concurrent without start", "version: 1\ntarget:\n  nats: {url: \"nats://a:4222\", stream: S, subject: s, durable: d}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.k}\", proxy: true}\n" + checks + "        concurrent: 2\n", "f.yaml:8:9: concurrent: 2 behind a broker publishes the event 2 times for 2 instances redeliver started to take one copy each, and this target has no start"},
		{"broker expect conflict", "version: 1\n" + amqpT + effects + checks + "        expect: conflict\n", "f.yaml:7:9: a broker target has no answer per delivery"},
		{"broker expect status", "version: 1\n" + amqpT + effects + checks + "        expect: {status: 200}\n", "f.yaml:7:9: a broker target has no answer per delivery"},
		{"message_id on http", "version: 1\n" + http + effects + checks + "        message_id: again\n", "f.yaml:9:9: message_id is the id a broker target publishes under; this target is http"},
		{"message_id in handler mode", "version: 1\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e}\n        message_id: x\n", "f.yaml:6:9: message_id is a fault from outside for a target"},
		{"empty message_id", "version: 1\n" + amqpT + effects + checks + "        message_id: \"\"\n", "f.yaml:8:21: message_id is empty"},
		{"target after checks", "version: 1\n" + effects + checks + "        drop: response\n" + amqpT, "f.yaml:6:9: drop cuts off an answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load("f.yaml", []byte(tt.src))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Load accepted the file (err %v); want %q", err, tt.want)
			}
			for _, e := range errs {
				if strings.HasPrefix(e.Error(), tt.want) {
					return
				}
			}
			t.Errorf("errors:\n%v\nwant one starting %q", errs, tt.want)
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := map[string]string{"A": "1", "E": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct{ in, want, err string }{
		{"x${A}y", "x1y", ""},
		{"${B:-def}", "def", ""},
		{"${E:-def}", "def", ""},
		{"${A:-def}", "1", ""},
		{"$A ${A}", "$A 1", ""},
		{"${B}", "", "B is not set"},
		{"${1x}", "", "not a variable reference"},
	}
	for _, tt := range tests {
		got, err := ExpandEnv(tt.in, lookup)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ExpandEnv(%q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ExpandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestSecretKey(t *testing.T) {
	if k, err := SecretKey("whsec_c2VjcmV0"); err != nil || string(k) != "secret" {
		t.Errorf("SecretKey(whsec_) = %q, %v", k, err)
	}
	if k, err := SecretKey("plain"); err != nil || string(k) != "plain" {
		t.Errorf("SecretKey(plain) = %q, %v", k, err)
	}
	if _, err := SecretKey("whsec_!!"); err == nil {
		t.Error("SecretKey accepted a whsec_ secret that is not base64")
	}
}

// FuzzExpandEnv: any string expands or fails with a sentence, never panics,
// and a string without "${" comes back unchanged.
func FuzzExpandEnv(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1:${PORT:-8080}/e", "${A}${B:-}", "$${X}", "${", "}${:-x}", "${A:-${B}}"} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) {
		if k == "A" {
			return "1", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ExpandEnv(s, lookup)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if !strings.Contains(s, "${") && got != s {
			t.Fatalf("ExpandEnv(%q) = %q, want it unchanged", s, got)
		}
	})
}

func TestLoadBrokerTarget(t *testing.T) {
	src := "version: 1\ntarget:\n  nats: {url: \"nats://127.0.0.1:4222\", stream: S, subject: \"s.{type}\", durable: d, create: true, mode: structured, drain_timeout: 5s, ack_wait: 2s}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.orderId}\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n        message_id: e-again\n        times: 2\n        expect: acked\n"
	s, err := Load("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	n, _ := s.Target.Broker.(*NATSTarget)
	if n == nil || n.URL != "nats://127.0.0.1:4222" || n.Stream != "S" || n.Subject.String() != "s.{type}" || n.Durable != "d" || !n.Create || n.Mode != "structured" || n.Drain != 5*time.Second || n.AckWait != 2*time.Second {
		t.Errorf("nats = %+v", n)
	}
	if s.Target.Broker == nil || s.Target.Channel() != "nats" {
		t.Errorf("Broker = %v, Channel() = %q", s.Target.Broker, s.Target.Channel())
	}
	if st := s.Checks[0].Steps[0]; st.MessageID != "e-again" || st.Times != 2 {
		t.Errorf("step = %+v", st)
	}
	src = "version: 1\ntarget:\n  amqp: {url: \"amqp://guest:guest@127.0.0.1:5672/\", queue: q}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.orderId}\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	if s, err = Load("t.yaml", []byte(src)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	a, _ := s.Target.Broker.(*AMQPTarget)
	if a == nil || a.Queue != "q" || a.Exchange != "" || !a.RoutingKey.IsZero() || a.Create || a.Mode != "binary" || a.Drain != DefaultDrainTimeout {
		t.Errorf("amqp = %+v", a)
	}
	t.Setenv("REDELIVER_TEST_KAFKA", "10.0.0.1:9092, 10.0.0.2:9092")
	src = "version: 1\ntarget:\n  kafka: {brokers: [\"${REDELIVER_TEST_KAFKA}\", \"h3:9093\"], topic: orders.v1, group: payments, create: true, partitions: 6, mode: structured}\n  start: {command: [a], ready: {stdout: x}, instances: 4}\neffects: {db: x.db, table: p, key: k, key_of: \"{data.orderId}\"}\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n        crash: random\n"
	if s, err = Load("t.yaml", []byte(src)); err != nil {
		t.Fatalf("Load: %v", err)
	}
	k, _ := s.Target.Broker.(*KafkaTarget)
	if k == nil || strings.Join(k.Brokers, " ") != "10.0.0.1:9092 10.0.0.2:9092 h3:9093" || k.Topic != "orders.v1" || k.Group != "payments" || !k.Create || k.Partitions != 6 || k.Mode != "structured" || k.Drain != DefaultDrainTimeout {
		t.Errorf("kafka = %+v", k)
	}
	if s.Target.Broker == nil || s.Target.Channel() != "kafka" || s.Target.DrainTimeout() != DefaultDrainTimeout {
		t.Errorf("Broker = %v, Channel() = %q", s.Target.Broker, s.Target.Channel())
	}
}

// TestAllowReset: allow_reset is a list of hosts, beside a reset.
func TestAllowReset(t *testing.T) {
	file := func(extra string) string {
		return "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:1/e\"}\neffects:\n  db: \"postgres://app:s3cret@db.example.com:5432/ci\"\n" + extra +
			"  table: payments\n  key: order_id\n  key_of: \"{data.orderId}\"\nchecks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	}
	t.Setenv("REDELIVER_TEST_ALLOW", "10.0.0.5")
	tests := []struct{ name, extra, want string }{
		{name: "hosts", extra: "  reset: [\"DELETE FROM payments\"]\n  allow_reset: [db.example.com, \"${REDELIVER_TEST_ALLOW}\"]\n"},
		{name: "not a list", extra: "  reset: [\"DELETE FROM payments\"]\n  allow_reset: db.example.com\n", want: "f.yaml:7:16: allow_reset must be a list of database hosts"},
		{name: "a URL", extra: "  reset: [\"DELETE FROM payments\"]\n  allow_reset: [\"postgres://db.example.com/x\"]\n", want: "f.yaml:7:17: allow_reset entry must be a host name or IP"},
		{name: "without reset", extra: "  allow_reset: [db.example.com]\n", want: "f.yaml:6:3: allow_reset names the hosts reset may empty, and effects has no reset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Load("f.yaml", []byte(file(tt.extra)))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Load refused the file: %v", err)
				}
				if got := strings.Join(s.Effects.AllowReset, " "); got != "db.example.com 10.0.0.5" || s.Effects.ResetPos.Line != 6 {
					t.Errorf("AllowReset = %q, ResetPos = %v", got, s.Effects.ResetPos)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v; want %q", err, tt.want)
			}
		})
	}
}

// TestMissingDir: a start or exec dir that does not exist is named, at
// its place in the file.
func TestMissingDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const effects = "effects: {db: x.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n"
	const checks = "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	for _, tt := range []struct{ name, src, want string }{
		{"start dir missing", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], dir: " + dir + "/nope, ready: {stdout: x}}\n", "f.yaml:4:30: start dir \"" + dir + "/nope\" does not exist"},
		{"exec dir missing", "version: 1\ntarget:\n  exec: {command: [a], dir: \"${REDELIVER_TEST_DIR}/nope\"}\n", "f.yaml:3:29: exec dir \"" + dir + "/nope\" does not exist"},
		{"start dir a file", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], dir: " + file + ", ready: {stdout: x}}\n", "f.yaml:4:30: start dir \"" + file + "\" is a file"},
		{"start dir there", "version: 1\ntarget:\n  http: {url: \"http://a:1/\"}\n  start: {command: [a], dir: " + dir + ", ready: {stdout: x}}\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDELIVER_TEST_DIR", dir)
			_, err := Load("f.yaml", []byte(tt.src+effects+checks))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Load refused the file: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestOneStatement(t *testing.T) {
	for _, c := range []struct {
		q  string
		ok bool
	}{
		{"SELECT k AS key FROM p", true},
		{"SELECT k AS key FROM p;", true},
		{"SELECT k AS key FROM p ; ;\n", true},
		{"SELECT k AS key FROM p; DELETE FROM p", false},
		{"SELECT k AS key FROM p;COMMIT", false},
		{"WITH x AS (SELECT 1) SELECT 1 AS key; PRAGMA query_only=0", false},
		{"SELECT k AS key FROM p WHERE k <> ';'", false}, // refused: a literal ; is not worth telling apart
	} {
		if _, ok := oneStatement(c.q); ok != c.ok {
			t.Errorf("oneStatement(%q) = %v, want %v", c.q, ok, c.ok)
		}
	}
}

// TestLoadBrokerStatementCrash: behind each broker, with the effects
// proxy and one started instance (instances absent or 1), crash:
// statements and a crash at a named statement are accepted.
func TestLoadBrokerStatementCrash(t *testing.T) {
	targets := map[string]string{
		"nats":  "  nats: {url: \"nats://127.0.0.1:4222\", stream: S, subject: s, durable: d}\n",
		"amqp":  "  amqp: {url: \"amqp://guest:guest@127.0.0.1:5672/\", queue: q}\n",
		"kafka": "  kafka: {brokers: [\"127.0.0.1:9092\"], topic: t, group: g}\n",
	}
	for name, target := range targets {
		for _, instances := range []string{"", ", instances: 1"} {
			for _, crash := range []struct{ src, kind, words string }{
				{"statements", CrashStatements, ""},
				{"{after: commit}", CrashStatement, "commit"},
				{"{before: \"INSERT INTO payments\"}", CrashStatement, "INSERT INTO payments"},
			} {
				src := "version: 1\ntarget:\n" + target + "  start: {command: [a, \"${REDELIVER_DB_URL}\"], ready: {stdout: x}" + instances + "}\n" +
					"effects: {db: x.db, table: p, key: k, key_of: \"{data.orderId}\", proxy: true}\n" +
					"checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n        crash: " + crash.src + "\n"
				s, err := Load("t.yaml", []byte(src))
				if err != nil {
					t.Errorf("%s%s, crash: %s: %v", name, instances, crash.src, err)
					continue
				}
				c := s.Checks[0].Steps[0].Crash
				if s.Target.Channel() != name || c == nil || c.Kind != crash.kind || c.Words != crash.words || !c.Statement() {
					t.Errorf("%s%s, crash: %s: channel %s, crash %+v", name, instances, crash.src, s.Target.Channel(), c)
				}
			}
		}
	}
}
