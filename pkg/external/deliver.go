package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redeliver/redeliver/pkg/consumer"
	"github.com/redeliver/redeliver/pkg/plainhttp"
	"github.com/redeliver/redeliver/pkg/proc"
	"github.com/redeliver/redeliver/pkg/redact"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// Kind is the consumer's answer to one delivery, as a broker reads it.
type Kind = consumer.Outcome

// The answers.
const (
	Acked    = consumer.Acked    // 2xx, or exit 0: the broker forgets the event
	Conflict = consumer.Conflict // 409 or 422, or exit 65: same id, different payload, refused
	Rejected = consumer.Rejected // another 4xx, or exit 66: refused for good
	Unacked  = consumer.Unacked  // 5xx, 429, a timeout, a reset, a kill: the broker will redeliver
)

// MaxRetryAfter bounds how long a Retry-After header (on a 429 or a 5xx)
// holds back the redelivery it asks for.
const MaxRetryAfter = 3 * time.Second

// Exit statuses of an exec consumer.
const (
	ExitConflict = 65
	ExitRejected = 66
)

// Answer is what came back from one delivery.
type Answer struct {
	Kind   Kind
	Status int // the HTTP status or exit status; 0 when there was none
	// Body is the first line of a 5xx answer's body (what the consumer
	// said went wrong), or "".
	Body string
	// Why there was no answer, when there was none.
	Err      error
	TimedOut bool
	Refused  bool // nothing listened: the connection was refused
	Dropped  bool // the answer arrived and was cut off on purpose (drop: response)
	Killed   bool // the consumer was killed while the delivery was in flight
	Crashed  bool // the consumer was killed during or after this delivery (crash:)
	// CrashCame says when that kill came against the consumer's answer.
	CrashCame Timing
	// InWork: a kill at a statement boundary after the answer came while
	// the consumer still worked on the delivery in the database — the
	// statement held before it never ran, a transaction of it was open,
	// or it had statements to come — so it interrupted that work.
	// Spent: such a kill came at the boundary after the delivery's last
	// statement, as its recording saw it, nothing of it open: it
	// interrupted nothing.
	InWork, Spent bool
	// KilledAt is when the kill came, Restarted when the consumer was
	// ready again after it (zero when it was not restarted).
	KilledAt, Restarted time.Time
	// RetryAfter is how long the consumer asked the redelivery to wait
	// (an HTTP Retry-After header, at most MaxRetryAfter).
	RetryAfter time.Duration
}

// Timing is when a crash came against the consumer's answer to the
// delivery it was aimed at.
type Timing string

// The timings of a crash.
const (
	// BeforeAnswer: the kill came while the delivery was in flight — an
	// HTTP consumer had sent no status, an exec process had not exited.
	// It interrupted the delivery.
	BeforeAnswer Timing = "before-answer"
	// AfterAnswer: the consumer's answer (a status, an exit) came first,
	// or won the race with the kill. The kill interrupted no delivery; it
	// can only catch work the consumer does after answering.
	AfterAnswer Timing = "after-answer"
	// Unknown: a broker target's instance was killed after the publish;
	// whether that instance had taken and acked the message by then is
	// the broker's to know, and redeliver does not ask.
	Unknown Timing = "unknown"
)

// String says the answer in a few words for a report.
func (a Answer) String() string {
	switch {
	case a.Dropped:
		return fmt.Sprintf("unacked (the answer %d was dropped)", a.Status)
	case a.Killed && a.Status == 0:
		return "unacked (killed before it answered)"
	case a.TimedOut:
		return "unacked (no answer in time)"
	case a.Err != nil:
		// The consumer's stderr lines an exec failure quotes come last.
		msg, lines, _ := strings.Cut(a.Err.Error(), proc.StderrIntro)
		if lines != "" {
			lines = proc.StderrIntro + lines
		}
		return "unacked (" + msg + ")" + lines
	case a.Status != 0 && a.Body != "":
		return fmt.Sprintf("%s (%d: %s)", a.Kind, a.Status, a.Body)
	case a.Status != 0:
		return fmt.Sprintf("%s (%d)", a.Kind, a.Status)
	}
	return string(a.Kind)
}

// consumerAcked reports whether the consumer acked, even when its answer
// was then dropped on purpose.
func (a Answer) consumerAcked() bool {
	if a.Dropped {
		return a.Status == 0 || Classify(a.Status) == Acked
	}
	return a.Kind == Acked
}

// Short says the answer in a few words on one line: the consumer's stderr
// lines an exec failure carries are left out.
func (a Answer) Short() string {
	s, _, _ := strings.Cut(a.String(), proc.StderrIntro)
	return s
}

// deliverer hands one event to the consumer and waits for its answer.
type deliverer interface {
	// Deliver sends ev; with kill not nil, a consumer run per delivery is
	// killed when kill is closed.
	Deliver(ctx context.Context, ev Event, kill <-chan struct{}) Answer
	// Forget drops kept-alive connections, after the consumer was restarted.
	Forget()
	// Describe names the target in words for the report.
	Describe() string
}

func newDeliverer(t *scenario.Target) deliverer {
	if t.HTTP != nil {
		return newHTTPDeliverer(t.HTTP)
	}
	return &execDeliverer{spec: t.Exec}
}

// httpDeliverer posts one request per delivery: through the plain
// client to an http:// target, through net/http otherwise.
type httpDeliverer struct {
	spec      *scenario.HTTPTarget
	plain     *plainhttp.Client // nil: net/http makes every delivery
	transport *http.Transport
	client    *http.Client
}

func newHTTPDeliverer(h *scenario.HTTPTarget) *httpDeliverer {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // a consumer under test is reached directly
	tr.MaxIdleConnsPerHost = 64
	return &httpDeliverer{spec: h, plain: plainhttp.New(h.URL, h.Method), transport: tr, client: &http.Client{
		Transport: tr,
		// A redirect is not an acknowledgement: report the 3xx as it came.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

func (d *httpDeliverer) Describe() string {
	return fmt.Sprintf("%s %s (%s)", d.spec.Method, redact.String(d.spec.URL), d.spec.Mode)
}

func (d *httpDeliverer) Forget() {
	if d.plain != nil {
		d.plain.Forget()
	}
	d.transport.CloseIdleConnections()
}

// Classify turns an HTTP status into an answer. 429 asks for the event
// again later: it is no ack.
func Classify(status int) Kind {
	switch {
	case status >= 200 && status < 300:
		return Acked
	case status == http.StatusConflict || status == http.StatusUnprocessableEntity:
		return Conflict
	case status == http.StatusTooManyRequests:
		return Unacked
	case status >= 400 && status < 500:
		return Rejected
	}
	return Unacked
}

func (d *httpDeliverer) Deliver(ctx context.Context, ev Event, _ <-chan struct{}) Answer {
	now := time.Now()
	if d.plain != nil {
		body, hdr, err := requestParts(d.spec, ev, now)
		if err != nil {
			return Answer{Kind: Unacked, Err: err}
		}
		if plainhttp.Writable(hdr) {
			return d.plainDeliver(ctx, d.plain.Request(body, hdr), now)
		}
	}
	req, err := Request(d.spec, ev, now)
	if err != nil {
		return Answer{Kind: Unacked, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, d.spec.Timeout)
	defer cancel()
	resp, err := d.client.Do(req.WithContext(ctx))
	if err != nil {
		return Answer{Kind: Unacked, Err: transportError(err), TimedOut: ctx.Err() == context.DeadlineExceeded, Refused: errors.Is(err, syscall.ECONNREFUSED)}
	}
	var first plainhttp.BodyHead
	var sink io.Writer = io.Discard
	if resp.StatusCode >= 500 {
		sink = &first
	}
	_, err = io.Copy(sink, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		// The status came, the body was cut: the consumer may have died
		// answering. A broker acts on the status it received.
		_ = err
	}
	a := Answer{Kind: Classify(resp.StatusCode), Status: resp.StatusCode, Body: first.Line()}
	if a.Kind == Unacked {
		a.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return a
}

// plainDeliver makes a delivery through the plain client; sent is when
// the delivery began, its deadline the target's timeout after it.
func (d *httpDeliverer) plainDeliver(ctx context.Context, req *http.Request, sent time.Time) Answer {
	deadline := sent.Add(d.spec.Timeout)
	status, retry, head, err := d.plain.Do(ctx, req, deadline)
	if err != nil {
		timedOut := err == plainhttp.ErrTimedOut || errors.Is(err, context.DeadlineExceeded)
		return Answer{Kind: Unacked, Err: transportError(err), TimedOut: timedOut, Refused: errors.Is(err, syscall.ECONNREFUSED)}
	}
	a := Answer{Kind: Classify(status), Status: status, Body: head}
	if a.Kind == Unacked {
		a.RetryAfter = retryAfter(retry, time.Now())
	}
	return a
}

// retryAfter reads a Retry-After header — delay seconds, or an HTTP date —
// as a wait from now, bounded by MaxRetryAfter; 0 when there is none.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if n <= 0 {
			return 0
		}
		if n >= int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// transportError shortens a transport error to its cause.
func transportError(err error) error {
	var ne *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errors.New("no answer in time")
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("connection reset")
	case errors.As(err, &ne):
		return ne
	}
	return err
}

// together holds the stdin of a concurrent step's exec processes until
// every one of them has started: each then reads the event at once,
// however long the others took to start (a process per delivery, and
// a supervisor before it, start in tens of milliseconds on a quiet
// machine and in seconds on a loaded one, longer than a consumer's
// window between its check and its act).
type together struct {
	left sync.WaitGroup
	all  chan struct{}
}

type togetherKey struct{}

// startTogether returns ctx for n exec deliveries that start together.
func startTogether(ctx context.Context, n int) context.Context {
	t := &together{all: make(chan struct{})}
	t.left.Add(n)
	go func() {
		t.left.Wait()
		close(t.all)
	}()
	return context.WithValue(ctx, togetherKey{}, t)
}

func togetherOf(ctx context.Context) *together {
	t, _ := ctx.Value(togetherKey{}).(*together)
	return t
}

// started says that one process started (or could not be started).
func (t *together) started() {
	if t != nil {
		t.left.Done()
	}
}

// held is r, read once every process started.
func (t *together) held(ctx context.Context, r io.Reader) io.Reader {
	return &heldReader{t: t, ctx: ctx, r: r}
}

type heldReader struct {
	t    *together
	ctx  context.Context
	r    io.Reader
	open bool
}

func (h *heldReader) Read(p []byte) (int, error) {
	if !h.open {
		select {
		case <-h.t.all:
		case <-h.ctx.Done():
			return 0, h.ctx.Err()
		}
		h.open = true
	}
	return h.r.Read(p)
}

// execDeliverer runs one process per delivery, the event on its stdin.
type execDeliverer struct {
	spec *scenario.ExecTarget
}

func (d *execDeliverer) Describe() string {
	return "exec " + proc.CommandLine(d.spec.Command, d.spec.Shown)
}

func (d *execDeliverer) Forget() {}

// ExecError is an exec consumer that could not be run at all.
type ExecError struct{ Err error }

func (e *ExecError) Error() string { return e.Err.Error() }

func (d *execDeliverer) Deliver(ctx context.Context, ev Event, kill <-chan struct{}) Answer {
	cmd := exec.Command(proc.Program(d.spec.Command[0]), d.spec.Command[1:]...)
	cmd.Dir = d.spec.Dir
	cmd.Env = proc.Environ(d.spec.Env)
	var stdin io.Reader = bytes.NewReader(ev.Structured())
	together := togetherOf(ctx)
	if together != nil {
		stdin = together.held(ctx, stdin)
	}
	cmd.Stdin = stdin
	var stderr proc.Tail
	c, err := proc.Spawn(cmd, nil, func(r io.Reader) { io.Copy(&stderr, r) })
	together.started()
	if err != nil {
		return Answer{Kind: Unacked, Err: &ExecError{fmt.Errorf("cannot run %s: %v", d.spec.Command[0], proc.UnwrapExec(err))}}
	}
	a, err := d.waitExit(ctx, c, kill)
	return exitAnswer(a, cmd, err, &stderr)
}

// waitExit waits for a started delivery's process to exit, up to the
// target's timeout, a kill, or ctx's end, and kills it when it does not
// exit first; it returns the answer so far (timed out, killed) and how
// the process ended.
func (d *execDeliverer) waitExit(ctx context.Context, c *proc.Child, kill <-chan struct{}) (Answer, error) {
	done := make(chan error, 1)
	// Once the process exits, what it left in its group and outside it
	// is stopped, and its stderr read to the end.
	go func() { done <- c.Wait() }()
	timer := time.NewTimer(d.spec.Timeout)
	defer timer.Stop()
	var a Answer
	var err error
	select {
	case err = <-done:
	case <-timer.C:
		a.TimedOut = true
	case <-kill:
		// A process that exited as the kill came answered first.
		select {
		case err = <-done:
		default:
			a.Killed = true
		}
	case <-ctx.Done():
	}
	if a.TimedOut || a.Killed || ctx.Err() != nil {
		c.Kill()
		err = <-done
	}
	return a, err
}

// exitAnswer is a's answer from how the delivery's process ended (err,
// cmd's state): its exit status, with the end of its stderr when it
// failed.
func exitAnswer(a Answer, cmd *exec.Cmd, err error, stderr *proc.Tail) Answer {
	var ee *exec.ExitError
	switch {
	case a.TimedOut:
		a.Kind, a.Err = Unacked, errors.New("no answer in time")
	case a.Killed:
		a.Kind = Unacked
	case err == nil, cmd.ProcessState != nil && cmd.ProcessState.Success():
		// A success whose stdin a stray still held (exec.ErrWaitDelay) is
		// a success all the same.
		a.Kind, a.Status = Acked, 0
	case errors.As(err, &ee) && ee.Exited():
		a.Status = ee.ExitCode()
		switch a.Status {
		case ExitConflict:
			a.Kind = Conflict
		case ExitRejected:
			a.Kind = Rejected
		default:
			a.Kind = Unacked
			a.Err = fmt.Errorf("exit status %d%s", a.Status, stderr.Last())
		}
	default:
		a.Kind, a.Err = Unacked, fmt.Errorf("%v%s", err, stderr.Last())
	}
	return a
}
