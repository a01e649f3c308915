package scenario

import (
	"errors"
	"strings"
	"testing"
)

const externalsHead = "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:1/e\"}\n  start: {command: [c, \"${REDELIVER_PAYMENTS_URL}\"], ready: \"tcp://127.0.0.1:1\", env: {SMTP: \"${REDELIVER_MAIL_ADDR}\"}}\n" +
	"effects: {db: x.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n"

func TestLoadExternals(t *testing.T) {
	src := externalsHead + `externals:
  payments:
    http:
      idempotency: {header: Idempotency-Key}
      respond: {status: 201, body: '{"id": "ch_{seq}"}'}
      latency: 5ms
    effect_key: "{body.orderId}"
    fail: {after_effect: timeout, times: 2}
    required: true
  mail:
    smtp: {}
    effect_key: "{to}|{subject}"
checks:
  - name: a
    steps:
      - deliver: {id: e, data: {orderId: O-1}}
        crash: {after: "post /v1/charges"}
    expect: {effects: {O-1: 1}, externals: {payments: {O-1: 1}, mail: {"a@x|Paid": 1}}}
`
	s, err := Load("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Externals) != 2 {
		t.Fatalf("externals %+v", s.Externals)
	}
	p, m := s.Externals[0], s.Externals[1]
	if p.Name != "payments" || p.HTTP == nil || p.HTTP.IdempotencyHeader != "Idempotency-Key" || p.HTTP.Status != 201 || p.HTTP.Body != `{"id": "ch_{seq}"}` ||
		p.HTTP.Latency.Milliseconds() != 5 || p.HTTP.FailAfterEffect != "timeout" || p.HTTP.FailTimes != 2 || !p.Required || p.EffectKey.String() != "{body.orderId}" || p.Var() != "REDELIVER_PAYMENTS_URL" {
		t.Errorf("payments %+v %+v", p, p.HTTP)
	}
	if m.Name != "mail" || !m.SMTP || m.HTTP != nil || m.Var() != "REDELIVER_MAIL_ADDR" || m.Required {
		t.Errorf("mail %+v", m)
	}
	st := s.Checks[0].Steps[0]
	if c := st.Crash; c.Kind != CrashExternal || c.Method != "POST" || c.Path != "/v1/charges" || !c.AfterStatement || c.String() != "{after: POST /v1/charges}" {
		t.Errorf("crash %+v", c)
	}
	if got := s.Checks[0].Expect.Externals; len(got) != 2 || got[0].External != "payments" || got[0].Key != "O-1" || got[0].N != 1 || got[1].Key != "a@x|Paid" {
		t.Errorf("expect externals %+v", got)
	}
	if len(s.Externals) != 2 {
		t.Fatal(len(s.Externals))
	}
	if s.Target.Start.Command[1] != "${REDELIVER_PAYMENTS_URL}" || s.Target.Start.Env["SMTP"] != "${REDELIVER_MAIL_ADDR}" {
		t.Errorf("the stand-ins' addresses were not kept for the start to fill in: %q %q", s.Target.Start.Command, s.Target.Start.Env)
	}
}

func TestLoadExternalsErrors(t *testing.T) {
	const checks = "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	const payments = "externals:\n  payments: {http: {}, effect_key: \"{body.orderId}\"}\n"
	const mail = "  mail: {smtp: {}, effect_key: \"{to}\"}\n"
	tests := []struct{ name, src, want string }{
		{"no kind", externalsHead + "externals:\n  payments: {effect_key: \"{body.orderId}\"}\n" + mail + checks, "f.yaml:7:3: external payments needs http: {…} (a provider called over HTTP), smtp: {} (a mail server), or nats, amqp or kafka: {…} (where the consumer publishes)"},
		{"two kinds", externalsHead + "externals:\n  payments: {http: {}, smtp: {}, effect_key: \"{body.orderId}\"}\n" + mail + checks, "f.yaml:7:24: external payments has two kinds; choose one of http, smtp, nats, amqp and kafka"},
		{"no effect key", externalsHead + "externals:\n  payments: {http: {}}\n" + mail + checks, "f.yaml:7:3: external payments needs effect_key: what one business effect is there"},
		{"empty effect key", externalsHead + "externals:\n  payments: {http: {}, effect_key: \" \"}\n" + mail + checks, "f.yaml:7:36: external payments: effect_key is empty"},
		{"bad effect key", externalsHead + "externals:\n  payments: {http: {}, effect_key: \"{body.orderId\"}\n" + mail + checks, "f.yaml:7:36: effect_key is not a valid template"},
		{"header not a token", externalsHead + "externals:\n  payments: {http: {idempotency: {header: \"Idempotency Key\"}}, effect_key: \"{body.orderId}\"}\n" + mail + checks, "f.yaml:7:43: idempotency header \"Idempotency Key\" is not an HTTP header name"},
		{"bad fail", externalsHead + "externals:\n  payments: {http: {}, effect_key: \"{body.orderId}\", fail: {after_effect: crash}}\n" + mail + checks, "f.yaml:7:75: after_effect must be timeout (the effect is performed and the answer lost) or 500"},
		{"fail on smtp", externalsHead + payments + "  mail: {smtp: {}, effect_key: \"{to}\", fail: {after_effect: timeout}}\n" + checks, "f.yaml:8:46: external mail: fail loses the answer of an HTTP call after its effect"},
		{"bad name", externalsHead + payments + mail + "  \"pay ments\": {http: {}, effect_key: \"{body.orderId}\"}\n" + checks, "f.yaml:9:3: external \"pay ments\": a name has letters"},
		{"undeclared variable", externalsHead + payments + checks, "f.yaml:4:94: ${REDELIVER_MAIL_ADDR} names no external: declare it under externals (mail: {smtp: {}, effect_key: …})"},
		{"same variable", externalsHead + payments + mail + "  PAYMENTS: {http: {}, effect_key: \"{body.orderId}\"}\n" + checks, "f.yaml:9:3: externals payments and PAYMENTS would both be ${REDELIVER_PAYMENTS_URL}; rename one"},
		{"count of no external", externalsHead + payments + mail + checks + "    expect: {externals: {bank: {o: 1}}}\n", "f.yaml:13:33: expect externals: bank is not an external of this file (externals: payments, mail)"},
		{"crash at a call with no http external", externalsHead + "externals:\n" + mail + "  payments: {smtp: {}, effect_key: \"{to}\"}\n" + checks + "        crash: {after: POST /v1/charges}\n", "f.yaml:13:16: crash: {after: POST /v1/charges} names an HTTP call, and this file declares no http external"},
		{"nats without a subject", externalsHead + payments + mail + "  paid: {nats: {url: \"nats://127.0.0.1:4222\"}, effect_key: \"{data.orderId}\"}\n" + checks, "f.yaml:9:16: external paid nats needs url and subject"},
		{"amqp with a nats url", externalsHead + payments + mail + "  paid: {amqp: {url: \"nats://127.0.0.1:4222\", queue: q}, effect_key: \"{data.orderId}\"}\n" + checks, "f.yaml:9:22: url must be a amqp:// URL"},
		{"kafka topic not a name", externalsHead + payments + mail + "  paid: {kafka: {brokers: [\"127.0.0.1:9092\"], topic: \"a b\"}, effect_key: \"{data.orderId}\"}\n" + checks, "f.yaml:9:54: topic \"a b\" is not a Kafka topic name"},
		{"effect key names nothing", externalsHead + "externals:\n  payments: {http: {}, effect_key: \"{bdy.orderId}\"}\n" + mail + checks, "f.yaml:7:3: external payments: effect_key placeholder {bdy.orderId} names nothing in its calls; expected {method}, {path}, {body}, {body.…}, {headers.…}, {query.…}"},
		{"mail key names a request's", externalsHead + payments + "  mail: {smtp: {}, effect_key: \"{body.to}\"}\n" + checks, "f.yaml:8:3: external mail: effect_key placeholder {body.to} names nothing in its calls; expected {from}, {to}, {subject}, {body}, {headers.…}"},
		{"an smtp external's variable", externalsHead + payments + "  MAIL: {http: {}, effect_key: \"{path}\"}\n" + checks, "f.yaml:4:94: ${REDELIVER_MAIL_ADDR} names no external: MAIL is an http external, at ${REDELIVER_MAIL_URL}"},
		{"a call's path without its slash", externalsHead + payments + mail + checks + "        crash: {after: \"post v1/charges\"}\n", "f.yaml:13:16: crash: {after: post v1/charges} reads as a statement's words; a call to an external is METHOD /path, its path with its leading /: POST /v1/charges"},
		{"externals without a target", "version: 1\nexternals:\n  mail: {smtp: {}, effect_key: \"{to}\"}\n" + checks, "f.yaml:2:1: externals are stand-ins for the services a consumer under test calls; they need a target"},
		{"externals count in handler mode", "version: 1\n" + checks + "    expect: {externals: {mail: {a: 1}}}\n", "f.yaml:6:14: externals counts the effects a target's stand-ins performed"},
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

// TestMisspeltKindSaysItOnce: a kind misspelt is one unknown field, not
// also a missing kind.
func TestMisspeltKindSaysItOnce(t *testing.T) {
	const checks = "checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	src := externalsHead + "externals:\n  payments: {http: {}, effect_key: \"{body.orderId}\"}\n  mail: {smpt: {}, effect_key: \"{to}\"}\n" + checks
	_, err := Load("f.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), `f.yaml:8:10: unknown field "smpt" in external mail; expected one of http, smtp,`) {
		t.Errorf("errors: %v; want the unknown field alone", err)
	}
}

func TestLoadPublishedExternals(t *testing.T) {
	src := externalsHead + `externals:
  payments: {http: {}, effect_key: "{body.orderId}"}
  mail: {smtp: {}, effect_key: "{to}"}
  paid-nats: {nats: {url: "nats://127.0.0.1:4222", subject: "orders.paid"}, effect_key: "{data.orderId}"}
  paid-amqp: {amqp: {url: "amqp://guest:guest@127.0.0.1:5672/", queue: paid}, effect_key: "{data.orderId}"}
  paid-kafka: {kafka: {brokers: ["127.0.0.1:9092"], topic: orders.paid}, effect_key: "{data.orderId}"}
checks:
  - name: a
    steps:
      - deliver: {id: e, data: {orderId: O-1}}
    expect: {externals: {paid-nats: {O-1: 1}}}
`
	s, err := Load("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	n, a, k := s.Externals[2].Publish, s.Externals[3].Publish, s.Externals[4].Publish
	if n == nil || n.NATS != "nats://127.0.0.1:4222" || n.Subject != "orders.paid" || s.Externals[2].Var() != "" ||
		a == nil || a.AMQP != "amqp://guest:guest@127.0.0.1:5672/" || a.Queue != "paid" ||
		k == nil || len(k.Kafka) != 1 || k.Topic != "orders.paid" {
		t.Errorf("published externals %+v %+v %+v", n, a, k)
	}
}

// TestEnvironmentKeepsItsOwnVariables: a ${REDELIVER_…_URL} the
// environment sets and no external declares is the environment's; one
// an external declares is the stand-in's, whatever the environment says.
func TestEnvironmentKeepsItsOwnVariables(t *testing.T) {
	t.Setenv("REDELIVER_BILLING_URL", "http://billing.test")
	t.Setenv("REDELIVER_PAYMENTS_URL", "http://elsewhere.test")
	src := "version: 1\ntarget:\n  http: {url: \"http://127.0.0.1:1/e\"}\n  start: {command: [c, \"${REDELIVER_BILLING_URL}\", \"${REDELIVER_PAYMENTS_URL}\"], ready: \"tcp://127.0.0.1:1\"}\n" +
		"effects: {db: x.db, table: payments, key: order_id, key_of: \"{data.orderId}\"}\n" +
		"externals:\n  payments: {http: {}, effect_key: \"{body.orderId}\"}\n" +
		"checks:\n  - name: a\n    steps:\n      - deliver: {id: e, data: {orderId: o}}\n"
	s, err := Load("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Target.Start.Command; got[1] != "http://billing.test" || got[2] != "${REDELIVER_PAYMENTS_URL}" {
		t.Errorf("command %q: want the environment's billing URL and the stand-in's payments one", got)
	}
}
