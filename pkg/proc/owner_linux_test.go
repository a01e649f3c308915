package proc

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/redeliver/redeliver/pkg/standin"
	"github.com/redeliver/redeliver/pkg/template"
)

// TestSocketOwner finds the process that holds the client end of a real
// TCP connection: the test process itself, or a child it handed the
// socket to, searched for under a given process; and none under a
// process that does not hold it, or for a connection that is not there.
func TestSocketOwner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() (*net.TCPConn, net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s := <-accepted
		t.Cleanup(func() { c.Close(); s.Close() })
		return c.(*net.TCPConn), s
	}
	_, ownServer := dial()
	// A child that holds the other connection's client end, once this
	// process closed its own copy.
	handed, handedServer := dial()
	f, err := handed.File()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Skip("no sleep to start:", err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	f.Close()
	handed.Close()
	idle := exec.Command("sleep", "60")
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idle.Process.Kill(); idle.Wait() })

	addr := func(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }
	self := os.Getpid()
	for _, tt := range []struct {
		name   string
		server net.Conn // the accepted end: its remote is the client
		root   int
		want   int // the owner, nearest first in the chain; 0: none found
		chain  []int
	}{
		{"own socket, under itself", ownServer, self, self, []int{self}},
		{"handed to a child, under the parent", handedServer, self, child.Process.Pid, []int{child.Process.Pid, self}},
		{"handed to a child, under the child", handedServer, child.Process.Pid, child.Process.Pid, []int{child.Process.Pid}},
		{"under a process that does not hold it", ownServer, idle.Process.Pid, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chain, err := socketOwner(addr(tt.server.RemoteAddr()), addr(tt.server.LocalAddr()), tt.root)
			if tt.want == 0 {
				if err == nil {
					t.Fatalf("got %v, want none found", chain)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(chain, tt.chain) {
				t.Errorf("chain = %v, want %v", chain, tt.chain)
			}
		})
	}
	t.Run("no such connection", func(t *testing.T) {
		a := addr(ownServer.RemoteAddr())
		gone := netip.AddrPortFrom(a.Addr(), a.Port()+1)
		if a.Port() == 65535 {
			gone = netip.AddrPortFrom(a.Addr(), 1)
		}
		if chain, err := socketOwner(gone, addr(ownServer.LocalAddr()), self); err == nil {
			t.Fatalf("got %v for a connection that is not there", chain)
		}
	})
}

// TestHolder finds the started instance that made a call held at an
// external's stand-in: of two instances, the one whose process (curl
// here) holds the call's connection; none when no instance's does; and
// the one there is when it does.
func TestHolder(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl to make the call:", err)
	}
	h, err := standin.StartHTTP("payments", standin.HTTPConfig{Status: 201}, template.Template{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hd := h.Hold("POST", "/v1/charges", false)
	defer hd.Stop()
	call := exec.Command(curl, "-s", "-m", "30", "-X", "POST", "-d", "{}", h.URL()+"/v1/charges")
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { call.Process.Kill(); call.Wait() })
	idle := exec.Command("sleep", "60")
	if err := idle.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idle.Process.Kill(); idle.Wait() })
	select {
	case <-hd.Held():
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the hold")
	}
	sleeper, caller := &Process{pid: idle.Process.Pid}, &Process{pid: call.Process.Pid}
	client, server := hd.Conn()
	for _, tt := range []struct {
		name  string
		procs []*Process
		want  int
	}{
		{"the second of two made it", []*Process{sleeper, caller}, 2},
		{"the first of two made it", []*Process{caller, sleeper}, 1},
		{"no instance made it", []*Process{sleeper, {pid: os.Getppid()}}, 0},
		{"the one instance made it", []*Process{caller}, 1},
		{"the one instance did not", []*Process{sleeper}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Holder(tt.procs, client, server); got != tt.want {
				t.Errorf("Holder = %d, want %d", got, tt.want)
			}
		})
	}
}
