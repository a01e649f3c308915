package external

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/plainhttp"
	"github.com/redeliver/redeliver/pkg/scenario"
)

// scripted is a consumer that reads each request and answers it with the
// next of its answers, raw bytes; after an answer, close says whether it
// closes the connection. It counts the connections it accepted, and
// keeps the requests it read.
type scripted struct {
	ln      net.Listener
	answers []scriptedAnswer
	mu      sync.Mutex
	n       int // answers given
	conns   int
	reqs    [][]byte
	closed  chan struct{} // a connection was closed by the consumer
}

type scriptedAnswer struct {
	raw   string
	close bool
	hang  bool // read the request, answer nothing
}

func newScripted(t *testing.T, answers ...scriptedAnswer) *scripted {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln, answers: answers, closed: make(chan struct{}, 16)}
	go s.serve()
	t.Cleanup(func() { ln.Close() })
	return s
}

func (s *scripted) url() string { return "http://" + s.ln.Addr().String() + "/events?x=1" }

func (s *scripted) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
		go s.conn(c)
	}
}

func (s *scripted) conn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		var raw bytes.Buffer
		req.Write(&raw)
		s.mu.Lock()
		s.reqs = append(s.reqs, raw.Bytes())
		a := s.answers[s.n%len(s.answers)]
		s.n++
		s.mu.Unlock()
		if a.hang {
			io.Copy(io.Discard, c)
			return
		}
		io.WriteString(c, a.raw)
		if a.close {
			c.Close()
			s.closed <- struct{}{}
			return
		}
	}
}

func (s *scripted) connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

const (
	ok201   = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
	chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"
)

// TestPlainClient: the answers a consumer may give, and how many
// connections three deliveries take: one when the answers let the
// connection be kept, three when they do not.
func TestPlainClient(t *testing.T) {
	big := "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(plainhttp.MaxBody+10) + "\r\n\r\n" + strings.Repeat("x", plainhttp.MaxBody+10)
	tests := []struct {
		name    string
		answers []scriptedAnswer
		status  int
		retry   time.Duration
		conns   int
	}{
		{"kept-alive", []scriptedAnswer{{raw: ok201}}, 201, 0, 1},
		{"chunked-with-trailer", []scriptedAnswer{{raw: chunked}}, 200, 0, 1},
		{"informational-first", []scriptedAnswer{{raw: "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + ok201}}, 201, 0, 1},
		{"no-content", []scriptedAnswer{{raw: "HTTP/1.1 204 No Content\r\n\r\n"}}, 204, 0, 1},
		{"retry-after", []scriptedAnswer{{raw: "HTTP/1.1 503 Busy\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n"}}, 503, time.Second, 1},
		{"connection-close", []scriptedAnswer{{raw: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"}}, 200, 0, 3},
		{"http-1.0", []scriptedAnswer{{raw: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"}}, 200, 0, 3},
		{"body-to-the-end", []scriptedAnswer{{raw: "HTTP/1.1 200 OK\r\n\r\nall of it", close: true}}, 200, 0, 3},
		{"body-too-long", []scriptedAnswer{{raw: big}}, 200, 0, 3},
		// The consumer closes the connection after its answer, without
		// saying so: the next delivery takes a new one, and no reset.
		{"closed-while-idle", []scriptedAnswer{{raw: ok201, close: true}}, 201, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted(t, tt.answers...)
			d := newHTTPDeliverer(&scenario.HTTPTarget{URL: s.url(), Method: "POST", Mode: scenario.ModeStructured, Timeout: 10 * time.Second})
			if d.plain == nil {
				t.Skip("the plain client is not used here")
			}
			ev := EventOf([]byte(`{"id":"e1","data":{"orderId":"O-1"}}`))
			for i := range 3 {
				a := d.Deliver(context.Background(), ev, nil)
				if a.Err != nil || a.Status != tt.status || a.RetryAfter != tt.retry {
					t.Fatalf("delivery %d: %s (status %d, wait %s); want %d, wait %s", i+1, a, a.Status, a.RetryAfter, tt.status, tt.retry)
				}
				if tt.answers[0].close {
					<-s.closed
				}
			}
			if got := s.connections(); got != tt.conns {
				t.Errorf("3 deliveries took %d connections, want %d", got, tt.conns)
			}
		})
	}
}

// TestPlainClientFailures: what a delivery says when no answer comes.
func TestPlainClientFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/events"
	ln.Close()
	tests := []struct {
		name     string
		answer   scriptedAnswer
		url      string
		want     string
		timedOut bool
		refused  bool
	}{
		{"hangs", scriptedAnswer{hang: true}, "", "unacked (no answer in time)", true, false},
		{"closes", scriptedAnswer{raw: "", close: true}, "", "unacked (connection reset)", false, false},
		{"half-a-header", scriptedAnswer{raw: "HTTP/1.1 200 OK\r\nContent-", close: true}, "", `unacked (malformed MIME header: missing colon: "Content-")`, false, false},
		{"half-the-headers", scriptedAnswer{raw: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n", close: true}, "", "unacked (connection reset)", false, false},
		{"not-http", scriptedAnswer{raw: "hello\r\n\r\n", close: true}, "", `unacked (malformed HTTP response "hello")`, false, false},
		{"refused", scriptedAnswer{}, refused, "unacked (connection refused)", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			if u == "" {
				u = newScripted(t, tt.answer).url()
			}
			d := newHTTPDeliverer(&scenario.HTTPTarget{URL: u, Method: "POST", Mode: scenario.ModeStructured, Timeout: 200 * time.Millisecond})
			if d.plain == nil {
				t.Skip("the plain client is not used here")
			}
			a := d.Deliver(context.Background(), EventOf([]byte(`{"id":"e1","data":{}}`)), nil)
			if a.String() != tt.want || a.Kind != Unacked || a.TimedOut != tt.timedOut || a.Refused != tt.refused {
				t.Errorf("got %s (timed out %v, refused %v); want %s (timed out %v, refused %v)", a, a.TimedOut, a.Refused, tt.want, tt.timedOut, tt.refused)
			}
		})
	}
}

// TestPlainClientCancel: a replay that stops ends the delivery in flight.
func TestPlainClientCancel(t *testing.T) {
	s := newScripted(t, scriptedAnswer{hang: true})
	d := newHTTPDeliverer(&scenario.HTTPTarget{URL: s.url(), Method: "POST", Mode: scenario.ModeStructured, Timeout: time.Hour})
	if d.plain == nil {
		t.Skip("the plain client is not used here")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Answer)
	go func() { done <- d.Deliver(ctx, EventOf([]byte(`{"id":"e1","data":{}}`)), nil) }()
	for {
		s.mu.Lock()
		n := len(s.reqs)
		s.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if a := <-done; a.Kind != Unacked || a.Err == nil || a.TimedOut {
		t.Errorf("a delivery cut by the replay's end: %s (timed out %v); want unacked, not timed out", a, a.TimedOut)
	}
}

// TestPlainClientWritesAsNetHTTP: the request's bytes are those net/http
// sends (but for the Accept-Encoding its transport adds), in every mode,
// and a header net/http refuses is refused as net/http refuses it.
func TestPlainClientWritesAsNetHTTP(t *testing.T) {
	ev := EventOf([]byte(`{"id":"evt-1","source":"shop","type":"order.paid","subject":"o-1","headers":{"traceparent":"t"},"data":{"orderId":"O-1","amount":10}}`))
	for _, mode := range []string{scenario.ModeStructured, scenario.ModeBinary, scenario.ModeRaw} {
		t.Run(mode, func(t *testing.T) {
			s := newScripted(t, scriptedAnswer{raw: ok201})
			h := &scenario.HTTPTarget{URL: s.url(), Method: "POST", Mode: mode, IDHeader: "Idempotency-Key", Headers: map[string]string{"X-Tenant": "acme"}, Timeout: 10 * time.Second}
			plain := newHTTPDeliverer(h)
			if plain.plain == nil {
				t.Skip("the plain client is not used here")
			}
			viaNetHTTP := newHTTPDeliverer(h)
			viaNetHTTP.plain = nil
			for _, d := range []*httpDeliverer{plain, viaNetHTTP} {
				if a := d.Deliver(context.Background(), ev, nil); a.Status != 201 {
					t.Fatalf("got %s", a)
				}
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			got, want := string(s.reqs[0]), strings.Replace(string(s.reqs[1]), "Accept-Encoding: gzip\r\n", "", 1)
			if got != want {
				t.Errorf("the plain client wrote\n%q\nnet/http wrote\n%q", got, want)
			}
		})
	}
	t.Run("a-header-net/http-refuses", func(t *testing.T) {
		s := newScripted(t, scriptedAnswer{raw: ok201})
		bad := EventOf([]byte(`{"id":"evt-1","headers":{"x-bad":"a\u0001b"},"data":{}}`))
		h := &scenario.HTTPTarget{URL: s.url(), Method: "POST", Mode: scenario.ModeStructured, Timeout: 10 * time.Second}
		plain, viaNetHTTP := newHTTPDeliverer(h), newHTTPDeliverer(h)
		viaNetHTTP.plain = nil
		a, b := plain.Deliver(context.Background(), bad, nil), viaNetHTTP.Deliver(context.Background(), bad, nil)
		if a.String() != b.String() || a.Err == nil {
			t.Errorf("the plain client: %s; net/http: %s; want the same refusal", a, b)
		}
	})
}

// TestServerErrorBody: a 5xx answer says the first line of its body,
// through the plain client and through net/http alike; another status
// says none, and a 5xx without a body says its status only.
func TestServerErrorBody(t *testing.T) {
	long := strings.Repeat("é", plainhttp.HeadRunes+10)
	tests := []struct {
		name, raw, want string
	}{
		{"first line", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 44\r\n\r\n\r\n  pq: password authentication failed\r\nat x", "unacked (500: pq: password authentication failed)"},
		{"chunked", "HTTP/1.1 503 Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndown!\r\n0\r\n\r\n", "unacked (503: down!)"},
		{"no body", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", "unacked (500)"},
		{"not a 5xx", "HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nbad", "rejected (400)"},
		{"a long line", "HTTP/1.1 500 X\r\nContent-Length: " + strconv.Itoa(len(long)) + "\r\n\r\n" + long, "unacked (500: " + string([]rune(long)[:plainhttp.HeadRunes]) + "…)"},
	}
	for _, tt := range tests {
		for _, plain := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/plain=%v", tt.name, plain), func(t *testing.T) {
				s := newScripted(t, scriptedAnswer{raw: tt.raw})
				d := newHTTPDeliverer(&scenario.HTTPTarget{URL: s.url(), Method: "POST", Mode: scenario.ModeStructured, Timeout: 10 * time.Second})
				if !plain {
					d.plain = nil
				}
				a := d.Deliver(context.Background(), EventOf([]byte(`{"id":"e1","data":{"orderId":"O-1"}}`)), nil)
				if got := a.String(); got != tt.want {
					t.Errorf("the answer says %q, want %q", got, tt.want)
				}
			})
		}
	}
}
