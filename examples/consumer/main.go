// Command consumer is an example payments consumer to put under test with
// redeliver's target mode: a real HTTP service (or one process per event
// with --exec) on PostgreSQL or SQLite. It is safe by default; --flaw makes
// it unsafe in one of the ways real consumers are, so each of redeliver's
// checks can be shown to catch it.
//
//	consumer --listen 127.0.0.1:8080 --db payments.db
//	consumer --exec --db postgres://postgres@127.0.0.1:5432/test < event.json
//
// See examples/README.md for the tables, the answers and each flaw's window.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Exit statuses of --exec, as redeliver's exec channel reads them.
const (
	exitAcked    = 0
	exitUsage    = 2
	exitConflict = 65
	exitRejected = 66
	exitTempFail = 75 // anything but 0, 65 and 66 is "no ack": redelivered
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// config is what the flags say.
type config struct {
	listen    string
	exec      bool
	db        string
	flaw      flaw
	work      time.Duration
	secretEnv string
	idHeader  string
	broker    brokerConfig
	poll      time.Duration
	pollTx    bool
	pool      int
	provider  string
	smtp      string
	publish   string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	var flawName string
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.listen, "listen", "", "serve HTTP on this address, e.g. 127.0.0.1:8080")
	fs.BoolVar(&c.exec, "exec", false, "process one event (a structured CloudEvent) from stdin and exit: 0 acked, 65 conflict, 66 rejected")
	fs.StringVar(&c.db, "db", "", "a SQLite file path (or sqlite:PATH), postgres://… (search_path=SCHEMA selects, and creates, a schema), or MySQL/MariaDB as mysql://USER@HOST:PORT/DB or the Go DSN USER@tcp(HOST:PORT)/DB")
	fs.StringVar(&flawName, "flaw", "", "make the consumer unsafe: none | check-then-act | ack-before-commit | marker-after-effect | marker-after-autocommit | external-without-key | commit-before-work (--kafka only) | commit-after-answer (empty: safe)")
	fs.DurationVar(&c.work, "work", 0, "simulated downstream latency, spent inside each flaw's window")
	fs.StringVar(&c.secretEnv, "secret-env", "", "environment variable holding the Standard Webhooks secret (whsec_<base64> or raw) to verify signatures with")
	fs.StringVar(&c.idHeader, "id-header", "Idempotency-Key", "raw mode: the header carrying the event id")
	fs.DurationVar(&c.poll, "poll", 0, "run a background job on the same connection pool: an UPDATE of the locks table at this interval (0: none)")
	fs.BoolVar(&c.pollTx, "poll-tx", false, "run the --poll job's UPDATE in a transaction of its own: BEGIN, UPDATE, COMMIT")
	fs.StringVar(&c.provider, "provider", "", "charge at this HTTP payment provider (POST URL/v1/charges with an Idempotency-Key) instead of the simulated provider's table")
	fs.StringVar(&c.smtp, "smtp", "", "mail each order's confirmation through this SMTP server (HOST:PORT) once its payment is committed")
	fs.StringVar(&c.publish, "publish", "", "publish order.paid (a structured CloudEvent, id and Nats-Msg-Id paid-ORDER) to nats://HOST:PORT/SUBJECT after each commit")
	fs.IntVar(&c.pool, "pool", 0, "the most connections the consumer opens to its database (0: 32 on PostgreSQL, no limit on SQLite)")
	c.broker.flags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	f, err := parseFlaw(flawName)
	if err != nil {
		return c, err
	}
	c.flaw = f
	switch {
	case c.db == "":
		return c, errors.New("--db is required: a SQLite file path, a postgres:// URL or a MySQL one")
	case c.flaw == flawCommitBeforeWork && c.broker.kafka == "":
		return c, errors.New("--flaw commit-before-work needs --kafka: it commits a consumer group's offsets before the work")
	case c.flaw == flawPublishWithoutID && c.publish == "":
		return c, errors.New("--flaw publish-without-id needs --publish: it publishes order.paid under a fresh id each time")
	case c.flaw == flawMailBeforeCommit && c.smtp == "":
		return c, errors.New("--flaw mail-before-commit needs --smtp: it mails the confirmation before its transaction commits")
	case c.flaw == flawChargeWithoutKey && c.provider == "":
		return c, errors.New("--flaw charge-without-key needs --provider: it calls the HTTP provider with no Idempotency-Key (external-without-key is the same flaw at the simulated provider's table)")
	case c.broker.on() && (c.exec || c.listen != ""):
		return c, errors.New("give one of --listen ADDR, --exec, --nats URL, --amqp URL and --kafka BROKERS")
	case c.broker.on():
		if err := c.broker.check(); err != nil {
			return c, err
		}
	case c.exec == (c.listen != ""):
		return c, errors.New("give exactly one of --listen ADDR, --exec, --nats URL, --amqp URL and --kafka BROKERS")
	case c.exec && (c.flaw == flawAckBeforeCommit || c.flaw == flawCommitAfterAnswer):
		return c, fmt.Errorf("--flaw %s needs --listen: an --exec process that has exited has nothing left to commit", string(c.flaw))
	case c.work < 0:
		return c, errors.New("--work must not be negative")
	case c.poll < 0:
		return c, errors.New("--poll must not be negative")
	case c.pool < 0:
		return c, errors.New("--pool must not be negative")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitUsage
	}
	var secret []byte
	if cfg.secretEnv != "" {
		v := os.Getenv(cfg.secretEnv)
		if v == "" {
			fmt.Fprintf(stderr, "consumer: --secret-env names %s, which is not set\n", cfg.secretEnv)
			return exitUsage
		}
		if secret, err = webhookKey(v); err != nil {
			fmt.Fprintf(stderr, "consumer: %s: %v\n", cfg.secretEnv, err)
			return exitUsage
		}
	}
	store, err := openStore(ctx, cfg.db)
	if err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	defer store.close()
	if cfg.pool > 0 {
		store.db.SetMaxOpenConns(cfg.pool)
		store.db.SetMaxIdleConns(cfg.pool)
	}
	if cfg.poll > 0 {
		stop := store.poll(cfg.poll, cfg.pollTx, stderr)
		defer stop()
	}
	c := &consumer{store: store, flaw: cfg.flaw, window: sleepFor(cfg.work), secret: secret, idHeader: cfg.idHeader, log: stderr, take: cfg.broker.take}
	if cfg.provider != "" {
		c.provider = &provider{url: cfg.provider, client: &http.Client{Timeout: 10 * time.Second}}
	}
	if cfg.smtp != "" {
		c.mail = &mailer{addr: cfg.smtp}
	}
	if cfg.publish != "" {
		if c.publish, err = openPublisher(cfg.publish, cfg.flaw == flawPublishWithoutID); err != nil {
			fmt.Fprintln(stderr, "consumer:", err)
			return 1
		}
		defer c.publish.nc.Close()
	}

	if cfg.exec {
		return c.execOne(ctx, stdin, stdout)
	}
	if cfg.broker.on() {
		return consumeBroker(ctx, c, cfg.broker, stdout, stderr)
	}
	return serve(ctx, c, cfg.listen, stdout, stderr)
}

// serve answers HTTP until SIGTERM or SIGINT. The example must not rely on
// a clean shutdown (redeliver kills it with SIGKILL to test crashes), so
// this is only politeness.
func serve(ctx context.Context, c *consumer, addr string, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	}
	srv := &http.Server{Handler: c.routes(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s (%s)\n", ln.Addr(), c.flaw)
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "consumer:", err)
		return exitTempFail
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	c.background.Wait()
	return 0
}

// sleepFor is the default window: the downstream call that takes a while.
func sleepFor(d time.Duration) func() error {
	return func() error {
		if d > 0 {
			time.Sleep(d)
		}
		return nil
	}
}
