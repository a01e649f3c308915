package proc

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseSocketLine(t *testing.T) {
	for _, tt := range []struct {
		name          string
		line          string
		local, remote string
		inode         uint64
		ok            bool
	}{
		{"ipv4 established", "   3: 0100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 51234 1 0000000000000000 20 4 30 10 -1",
			"127.0.0.1:5432", "127.0.0.1:53924", 51234, true},
		{"ipv4 listening", "   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0000000000000000 100 0 0 10 0",
			"0.0.0.0:22", "0.0.0.0:0", 1234, true},
		{"ipv6 mapped loopback", "   1: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1538 01 00000000:00000000 00:00000000 00000000  1000        0 777 1 0000000000000000 20 4 30 10 -1",
			"[::ffff:127.0.0.1]:40000", "[::ffff:127.0.0.1]:5432", 777, true},
		{"ipv6 loopback", "   2: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 100 0 0 10 0",
			"[::1]:80", "[::]:0", 99, true},
		{"header", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode", "", "", 0, false},
		{"short", "   3: 0100007F:1538 0100007F:D2A4 01", "", "", 0, false},
		{"bad hex", "   3: 0100007G:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 51234", "", "", 0, false},
		{"bad port", "   3: 0100007F:15389 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 51234", "", "", 0, false},
		{"bad inode", "   3: 0100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 -5", "", "", 0, false},
		{"odd length address", "   3: 100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 5", "", "", 0, false},
		{"empty", "", "", "", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			local, remote, inode, ok := parseSocketLine(tt.line)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if got := local.String(); got != tt.local {
				t.Errorf("local = %s, want %s", got, tt.local)
			}
			if got := remote.String(); got != tt.remote {
				t.Errorf("remote = %s, want %s", got, tt.remote)
			}
			if inode != tt.inode {
				t.Errorf("inode = %d, want %d", inode, tt.inode)
			}
		})
	}
}

// FuzzParseSocketLine: no line of the kernel's TCP table, or anything
// else, makes the parser panic, and what it reads it reads back.
func FuzzParseSocketLine(f *testing.F) {
	f.Add("   3: 0100007F:1538 0100007F:D2A4 01 00000000:00000000 00:00000000 00000000  1000        0 51234 1 0000000000000000 20 4 30 10 -1")
	f.Add("   1: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000100007F:1538 01 00000000:00000000 00:00000000 00000000  1000        0 777 1")
	f.Add("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	f.Add(": : : a b c d e f 1")
	f.Fuzz(func(t *testing.T, line string) {
		local, remote, _, ok := parseSocketLine(line)
		if !ok {
			return
		}
		for _, a := range []netip.AddrPort{local, remote} {
			if !a.IsValid() {
				t.Fatalf("%q: an invalid address %v read as ok", line, a)
			}
		}
		f := strings.Fields(line)
		if back, ok := hexAddrPort(f[1]); !ok || back != local {
			t.Fatalf("%q: local read as %v, then %v", line, local, back)
		}
	})
}
