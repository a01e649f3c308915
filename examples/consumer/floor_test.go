package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/redeliver/redeliver/pkg/rawio"
)

// floorSend is the least a Go program can do to deliver a capture to the
// consumer as a replay at --parallel N does, and the floor the benchmark
// sets redeliver's CPU beside: each line POSTed as a structured
// CloudEvent, every tenth twice (a replay's --redeliver 0.1), N kept-alive
// connections, on one processor, written and read with raw system calls
// (pkg/rawio) as redeliver's client does. Nothing is parsed, recorded,
// read back or judged; an answer is read to its Content-Length and its
// status ignored.
//
//	floorsender ADDR CAPTURE N
func floorSend(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: floorsender ADDR CAPTURE N")
		return 2
	}
	addr, capture := args[0], args[1]
	lanes, err := strconv.Atoi(args[2])
	if err != nil || lanes < 1 {
		fmt.Fprintln(os.Stderr, "floorsender: N must be a positive number")
		return 2
	}
	runtime.GOMAXPROCS(1)
	f, err := os.Open(capture)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floorsender:", err)
		return 1
	}
	defer f.Close()
	lines := make(chan []byte, 64)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent int
	var failed error
	for range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := floorLane(addr, lines)
			mu.Lock()
			sent += n
			if err != nil && failed == nil {
				failed = err
			}
			mu.Unlock()
			for range lines { // a failed lane lets the others finish
			}
		}()
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 1; sc.Scan(); i++ {
		line := bytes.Clone(sc.Bytes())
		lines <- line
		if i%10 == 0 {
			lines <- line
		}
	}
	close(lines)
	wg.Wait()
	if failed != nil {
		fmt.Fprintln(os.Stderr, "floorsender:", failed)
		return 1
	}
	fmt.Printf("%d deliveries\n", sent)
	return 0
}

// floorLane sends lines down one connection, one at a time.
func floorLane(addr string, lines <-chan []byte) (int, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	c := rawio.Conn(nc)
	req := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	sent := 0
	for line := range lines {
		req = fmt.Appendf(req[:0], "POST /events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/cloudevents+json\r\nContent-Length: %d\r\n\r\n", addr, len(line))
		req = append(req, line...)
		if _, err := c.Write(req); err != nil {
			return sent, err
		}
		if err := floorAnswer(c, buf); err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}

// floorAnswer reads one answer: its head, then its body to Content-Length.
func floorAnswer(c net.Conn, buf []byte) error {
	got := 0
	for {
		n, err := c.Read(buf[got:])
		if err != nil {
			return err
		}
		got += n
		head := bytes.Index(buf[:got], []byte("\r\n\r\n"))
		if head < 0 {
			if got == len(buf) {
				return fmt.Errorf("an answer's head longer than %d bytes", len(buf))
			}
			continue
		}
		length := 0
		for _, l := range bytes.Split(buf[:head], []byte("\r\n")) {
			if k, v, ok := bytes.Cut(l, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
				length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if got >= head+4+length {
			return nil
		}
		if head+4+length > len(buf) {
			return fmt.Errorf("an answer longer than %d bytes", len(buf))
		}
	}
}
