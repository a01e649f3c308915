package consumertest

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePort(t *testing.T) {
	low := ephemeralLow()
	seen := map[string]bool{}
	for i := 0; i < 50; i++ {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %s handed out twice", p)
		}
		seen[p] = true
		if n, _ := strconv.Atoi(p); n < 10000 || n >= low {
			t.Fatalf("port %s outside 10000..%d, below the ephemeral range", p, low-1)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Fatalf("port %s is not free: %v", p, err)
		}
		ln.Close()
	}
}
