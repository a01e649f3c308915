package plainhttp

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNew: an http:// URL gets the client; what net/http must make is
// left to it (nil).
func TestNew(t *testing.T) {
	if !canPeek || plainOff {
		t.Skip("net/http makes every delivery in this build")
	}
	for _, tt := range []struct {
		name, url, method string
		want              bool
	}{
		{"http", "http://127.0.0.1:8080/events", "POST", true},
		{"no port", "http://consumer/events", "PUT", true},
		{"https", "https://127.0.0.1:8443/events", "POST", false},
		{"a user", "http://u:p@127.0.0.1:8080/events", "POST", false},
		{"a method that is no token", "http://127.0.0.1:8080/events", "PO ST", false},
		{"an international host", "http://bücher.example/events", "POST", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.url, tt.method) != nil; got != tt.want {
				t.Errorf("New(%q, %q) != nil is %v, want %v", tt.url, tt.method, got, tt.want)
			}
		})
	}
}

// TestWritable: headers net/http's transport would refuse are not the
// client's to write.
func TestWritable(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    http.Header
		want bool
	}{
		{"plain", http.Header{"Content-Type": {"application/json"}, "X-Tab": {"a\tb"}}, true},
		{"a name that is no token", http.Header{"X Bad": {"v"}}, false},
		{"a control byte in a value", http.Header{"X-Bad": {"a\x01b"}}, false},
		{"a DEL in a value", http.Header{"X-Bad": {"a\x7fb"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Writable(tt.h); got != tt.want {
				t.Errorf("Writable = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBodyHeadLine: the first line of a body that is not blank, cut to
// HeadRunes.
func TestBodyHeadLine(t *testing.T) {
	long := strings.Repeat("é", HeadRunes+1)
	for _, tt := range []struct{ name, body, want string }{
		{"first line", "\r\n  pq: no such table \r\nat x", "pq: no such table"},
		{"empty", "", ""},
		{"blank", " \n\t\n", ""},
		{"long", long, string([]rune(long)[:HeadRunes]) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var h BodyHead
			h.Write([]byte(tt.body))
			if got := h.Line(); got != tt.want {
				t.Errorf("Line = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDo: deliveries share one kept-alive connection, and one whose
// answer does not come by its deadline is ErrTimedOut.
func TestDo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					req.Body.Close()
					if req.Header.Get("X-Hang") != "" {
						time.Sleep(2 * time.Second)
						return
					}
					c.Write([]byte("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n"))
				}
			}()
		}
	}()
	p := New("http://"+ln.Addr().String()+"/events", "POST")
	if p == nil {
		t.Skip("net/http makes every delivery in this build")
	}
	for i := range 3 {
		status, _, _, err := p.Do(context.Background(), p.Request([]byte("{}"), http.Header{}), time.Now().Add(10*time.Second))
		if err != nil || status != 201 {
			t.Fatalf("delivery %d: %d, %v; want 201", i+1, status, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("three deliveries took %d connections, want 1 kept alive", n)
	}
	_, _, _, err = p.Do(context.Background(), p.Request([]byte("{}"), http.Header{"X-Hang": {"1"}}), time.Now().Add(100*time.Millisecond))
	if err != ErrTimedOut {
		t.Errorf("a delivery past its deadline: %v, want ErrTimedOut", err)
	}
}
