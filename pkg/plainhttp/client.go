package plainhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client makes the deliveries to an http:// target over kept-alive
// TCP connections, each request written and its answer read in the
// delivery's own goroutine. net/http's client runs a reading and a writing
// goroutine per connection and hands every request and answer between
// them, which cost redeliver more CPU per delivery than the round trip
// itself. The request is written and the answer read by net/http's own
// code (http.Request.Write, http.ReadResponse), so the bytes on the wire
// and the reading of the answer are net/http's; what is left here is the
// pool of connections, the deadline, and the headers net/http's transport
// refuses.
//
// A connection is kept for the next delivery only when the answer said
// so and its body was read to the end; before it is used again, a look at
// its socket (without reading) tells whether the consumer closed it while
// it was idle, as net/http's reading goroutine would have noticed, so
// that a delivery is not sent down a connection already closed.
type Client struct {
	url    *url.URL
	host   string // the Host header
	method string
	addr   string // host:port dialled
	dialer net.Dialer

	mu   sync.Mutex
	idle []*plainConn
	gen  int // raised by Forget: connections of an older one are closed
}

// plainConn is one kept-alive connection.
type plainConn struct {
	c    net.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	gen  int
	body io.LimitedReader // an answer's body, up to MaxBody
	idle func() bool      // whether it is still open and has nothing to read
}

// maxIdle is how many idle connections a Client keeps, as many as
// the net/http transport it replaces kept per host.
const maxIdle = 64

// max1xx is how many informational answers (1xx but 101) may come before
// the answer, as net/http's transport allows.
const max1xx = 5

// MaxBody is how much of an answer's body is read: past it, the
// connection is closed instead.
const MaxBody = 1 << 20

// New returns the client for the target at rawURL, its requests made
// with method, or nil when its deliveries are left to net/http: https, a URL with a user, a method
// net/http would refuse, or a system where an idle connection cannot be
// looked at.
func New(rawURL, method string) *Client {
	if !canPeek || plainOff {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" || !isToken(method) {
		return nil
	}
	for _, c := range u.Host {
		if c >= 0x80 || c == ' ' || c == '/' {
			return nil // net/http rewrites such a host (IDNA, cleanHost)
		}
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return &Client{
		url: u, host: strings.TrimSuffix(u.Host, ":"), method: method, addr: net.JoinHostPort(u.Hostname(), port),
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
	}
}

// Request is the request of one delivery, to the target's URL.
func (p *Client) Request(body []byte, hdr http.Header) *http.Request {
	return &http.Request{
		Method: p.method, URL: p.url, Host: p.host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

// Forget closes the idle connections and every connection in use when it
// comes back: the consumer was restarted.
func (p *Client) Forget() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.gen++
	p.mu.Unlock()
	for _, pc := range idle {
		pc.c.Close()
	}
}

// get returns an idle connection the consumer has not closed, or dials a
// new one.
func (p *Client) get(ctx context.Context, deadline time.Time) (*plainConn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			gen := p.gen
			p.mu.Unlock()
			ctx, cancel := context.WithDeadline(ctx, deadline)
			c, err := p.dialer.DialContext(ctx, "tcp", p.addr)
			cancel()
			if err != nil {
				return nil, err
			}
			r, w, idle := socketOf(c)
			return &plainConn{c: c, br: bufio.NewReader(r), bw: bufio.NewWriter(w), gen: gen, idle: idle}, nil
		}
		pc := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if pc.idle() {
			return pc, nil
		}
		pc.c.Close()
	}
}

// put keeps pc for the next delivery, unless the consumer was restarted
// since it was dialled or enough are kept.
func (p *Client) put(pc *plainConn) {
	p.mu.Lock()
	if pc.gen == p.gen && len(p.idle) < maxIdle {
		p.idle = append(p.idle, pc)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	pc.c.Close()
}

// ErrTimedOut is a delivery whose answer did not come before its deadline.
var ErrTimedOut = errors.New("no answer in time")

// Do sends req (its body in body) and reads the answer's status and
// Retry-After header. The delivery ends at deadline, or when ctx is done.
func (p *Client) Do(ctx context.Context, req *http.Request, deadline time.Time) (status int, retry, head string, err error) {
	if err := ctx.Err(); err != nil {
		return 0, "", "", err
	}
	pc, err := p.get(ctx, deadline)
	if err != nil {
		if time.Now().After(deadline) {
			return 0, "", "", ErrTimedOut
		}
		if cerr := ctx.Err(); cerr != nil {
			return 0, "", "", cerr
		}
		return 0, "", "", err
	}
	if err := pc.c.SetDeadline(deadline); err != nil {
		pc.c.Close()
		return 0, "", "", err
	}
	stop := func() bool { return true }
	if ctx.Done() != nil {
		// The replay stopped: the connection's deadline is moved to now,
		// and its read or write returns.
		stop = context.AfterFunc(ctx, func() { pc.c.SetDeadline(time.Unix(1, 0)) })
	}
	status, retry, head, keep, err := exchange(pc, req)
	if !stop() {
		keep = false
		if err != nil {
			err = ctx.Err()
		}
	}
	if keep && err == nil {
		p.put(pc)
	} else {
		pc.c.Close()
	}
	return status, retry, head, err
}

// exchange writes req on pc and reads its answer — its status, its
// Retry-After header and, for a 5xx, the first line of its body (head);
// keep says whether the connection may carry the next request.
func exchange(pc *plainConn, req *http.Request) (status int, retry, head string, keep bool, err error) {
	if err := req.Write(pc.bw); err != nil {
		return 0, "", "", false, connError(err)
	}
	if err := pc.bw.Flush(); err != nil {
		return 0, "", "", false, connError(err)
	}
	var resp *http.Response
	for n := 0; ; n++ {
		resp, err = http.ReadResponse(pc.br, req)
		if err != nil {
			return 0, "", "", false, connError(err)
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if n == max1xx {
			return 0, "", "", false, errors.New("too many informational answers (1xx)")
		}
	}
	status, retry = resp.StatusCode, resp.Header.Get("Retry-After")
	// The body is read to the end (up to MaxBody) for the connection to
	// carry the next request; the status came, and a body cut short is
	// not the answer's concern: a broker acts on the status it received.
	pc.body = io.LimitedReader{R: resp.Body, N: MaxBody}
	var first BodyHead
	var sink io.Writer = io.Discard
	if status >= 500 {
		sink = &first
	}
	n, rerr := io.Copy(sink, &pc.body)
	pc.body.R = nil
	if rerr != nil || n == MaxBody {
		// Not read to its end: Close would read the rest.
		return status, retry, first.Line(), false, nil
	}
	resp.Body.Close()
	keep = !resp.Close && status != http.StatusSwitchingProtocols
	return status, retry, first.Line(), keep, nil
}

// headBytes is how much of a 5xx answer's body is kept to show its first
// line.
const headBytes = 1024

// HeadRunes is how much of the first line of a 5xx answer's body is shown.
const HeadRunes = 200

// BodyHead keeps the beginning of an answer's body and discards the rest.
type BodyHead struct{ b []byte }

// Write keeps what fits of p and discards the rest.
func (h *BodyHead) Write(p []byte) (int, error) {
	if room := headBytes - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Line is the body's first line that is not blank, trimmed and cut to
// HeadRunes, or "".
func (h *BodyHead) Line() string {
	for _, l := range strings.Split(string(h.b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if r := []rune(l); len(r) > HeadRunes {
			l = string(r[:HeadRunes]) + "…"
		}
		return l
	}
	return ""
}

// connError is an error of the connection as transportError reads it: a
// deadline that passed is ErrTimedOut.
func connError(err error) error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrTimedOut
	}
	return err
}

// isToken reports whether s is an HTTP token: a method, a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c <= ' ' || c == 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validValue reports whether v may be a header's value as net/http's
// transport checks it: no control byte but a tab.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// Writable reports whether the headers of a request are ones the
// plain client writes as net/http's transport would: names that are
// tokens, values without control bytes (the transport refuses the others,
// and net/http gives that error).
func Writable(h http.Header) bool {
	for k, vv := range h {
		if !isToken(k) {
			return false
		}
		for _, v := range vv {
			if !validValue(v) {
				return false
			}
		}
	}
	return true
}
