package consumertest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on, for a
// consumer a test starts. It is drawn below the system's ephemeral range:
// a port the system hands out (to a listener on port 0, or to one of the
// many client connections the tests make) can be taken again by another
// socket before the consumer binds it, and the consumer then fails to
// listen, or a ready check reaches a neighbour's consumer. A port is not
// handed out twice by one test process.
func FreePort() (string, error) {
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	low := ephemeralLow() - 1
	for try := 0; try < 1000; try++ {
		p := 10000 + rand.IntN(low-10000)
		if ports.given[p] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		ports.given[p] = true
		return strconv.Itoa(p), nil
	}
	return "", fmt.Errorf("no free TCP port between 10000 and %d", low)
}

var ports struct {
	sync.Mutex
	given map[int]bool
}

// ephemeralLow is the first port of the system's ephemeral range
// (32768 where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				return n
			}
		}
	}
	return 32768
}
