//go:build !linux || norawio

package rawio

import "net"

func wrap(c net.Conn) net.Conn { return c }
