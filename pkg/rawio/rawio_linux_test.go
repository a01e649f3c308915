//go:build linux && !norawio

package rawio

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// socketPair is a connected pair of TCP connections on loopback: the
// client's read and written through Conn, and the server's end.
func socketPair(t *testing.T) (client net.Conn, r io.Reader, w io.Writer, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	sc := <-accepted
	if sc == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { client.Close(); sc.Close() })
	rw := Conn(client)
	if _, ok := rw.(*conn); !ok {
		t.Fatalf("Conn gave %T; want the raw connection", rw)
	}
	return client, rw, rw, sc.(*net.TCPConn)
}

// TestConn holds the raw socket reads and writes to what net.Conn
// gives: a write far larger than the socket's buffer arrives whole, a
// deadline is a timeout, a reset and a close read as net.Conn's errors.
func TestConn(t *testing.T) {
	t.Run("a write larger than the socket buffer", func(t *testing.T) {
		_, _, w, server := socketPair(t)
		data := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
		got := make(chan [32]byte)
		go func() {
			h := sha256.New()
			io.CopyN(h, server, int64(len(data)))
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			got <- sum
		}()
		if n, err := w.Write(data); n != len(data) || err != nil {
			t.Fatalf("wrote %d of %d: %v", n, len(data), err)
		}
		if <-got != sha256.Sum256(data) {
			t.Fatal("the server read other bytes than were written")
		}
	})
	t.Run("reads what was sent, then EOF", func(t *testing.T) {
		_, r, _, server := socketPair(t)
		server.Write([]byte("HTTP/1.1 200 OK\r\n\r\n"))
		server.Close()
		b, err := io.ReadAll(r)
		if string(b) != "HTTP/1.1 200 OK\r\n\r\n" || err != nil {
			t.Fatalf("read %q, %v", b, err)
		}
	})
	t.Run("a deadline is a timeout", func(t *testing.T) {
		client, r, _, _ := socketPair(t)
		client.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := r.Read(make([]byte, 10))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("got %v; want a timeout", err)
		}
	})
	t.Run("a reset reads as net.Conn's", func(t *testing.T) {
		client, r, _, server := socketPair(t)
		server.SetLinger(0)
		server.Close()
		time.Sleep(10 * time.Millisecond)
		_, err := r.Read(make([]byte, 10))
		want := "read tcp " + client.LocalAddr().String() + "->" + client.RemoteAddr().String() + ": read: connection reset by peer"
		if !errors.Is(err, syscall.ECONNRESET) || err.Error() != want {
			t.Fatalf("got %v; want %s", err, want)
		}
	})
	t.Run("a closed connection reads as net.Conn's", func(t *testing.T) {
		client, r, w, _ := socketPair(t)
		client.Close()
		_, want := client.Read(make([]byte, 10))
		if _, err := r.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) || err.Error() != want.Error() {
			t.Fatalf("read: got %v; want %v", err, want)
		}
		if _, err := w.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write: got %v; want %v", err, net.ErrClosed)
		}
	})
	t.Run("a write to a reset connection fails", func(t *testing.T) {
		_, _, w, server := socketPair(t)
		server.SetLinger(0)
		server.Close()
		time.Sleep(10 * time.Millisecond)
		var err error
		for i := 0; i < 10 && err == nil; i++ {
			_, err = w.Write(make([]byte, 1<<16))
		}
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
			t.Fatalf("got %v; want a reset or a broken pipe", err)
		}
	})
}

// TestConnUnix: a Unix connection is read raw too, and its errors name
// the network as net.Conn's do.
func TestConnUnix(t *testing.T) {
	path := t.TempDir() + "/s"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	client, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	rw := Conn(client)
	if _, ok := rw.(*conn); !ok {
		t.Fatalf("Conn gave %T; want the raw connection", rw)
	}
	if b, err := io.ReadAll(rw); string(b) != "hello" || err != nil {
		t.Fatalf("read %q, %v", b, err)
	}
	client.Close()
	_, want := client.Read(make([]byte, 1))
	if _, err := rw.Read(make([]byte, 1)); err == nil || err.Error() != want.Error() {
		t.Fatalf("got %v; want %v", err, want)
	}
}
