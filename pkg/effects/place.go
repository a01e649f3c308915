package effects

// Where a database connection string leads — the hosts a driver would
// dial, resolved the way the driver resolves them — and whether that is a
// database the user plainly meant to empty: this machine, or a service
// container named with one label. Nothing here connects.

import (
	"net"
	"strings"
)

// Kinds of database.
const (
	Postgres = "postgres"
	MySQL    = "mysql"
	SQLite   = "sqlite"
)

// Place is where a connection string leads, without its user or password.
type Place struct {
	Kind string
	// Hosts are the addresses a driver would try, each HOST:PORT or a
	// unix socket's directory or path; none for a file.
	Hosts []string
	// Name is the database's name, or the file's path.
	Name string
	// File: the database is a file the consumer opens (SQLite), with no
	// server between.
	File bool
}

// String names the place in words: "PostgreSQL 127.0.0.1:5432/test",
// "MySQL db:3306/shop", "SQLite file effects.db".
func (p *Place) String() string {
	if p.File {
		return KindName(p.Kind) + " file " + p.Name
	}
	return KindName(p.Kind) + " " + p.Address()
}

// Address is the hosts and the database name: "127.0.0.1:5432/test".
func (p *Place) Address() string {
	if p.File {
		return p.Name
	}
	return strings.Join(p.Hosts, ",") + "/" + p.Name
}

// Host is the host part of an address: the name or IP without the
// port, or a unix socket's path as it is.
func Host(addr string) string {
	if strings.HasPrefix(addr, "/") {
		return addr
	}
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Local reports whether a host is one a reset plainly meant: a unix
// socket, a loopback address, localhost, or a name of one label (such
// as postgres or db, as CI service containers and compose services are
// named; see serviceName). An empty host dials this machine.
func Local(host string) bool {
	switch {
	case host == "", strings.HasPrefix(host, "/"), strings.HasPrefix(host, "@"):
		return true
	}
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	addr, _, zoned := strings.Cut(h, "%") // an IPv6 zone: fe80::1%eth0
	if ip := net.ParseIP(addr); ip != nil {
		return ip.IsLoopback()
	}
	if zoned {
		return false
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	return serviceName(h)
}

// serviceName reports whether h is a host name of one label, as a CI
// service container or a compose service is named: letters, digits, "-"
// and "_", starting with a letter or "_". A label that starts with a
// digit may be an IPv4 address to libc's resolver (167772165 and
// 0x0a000005 are 10.0.0.5), and anything else is no name.
func serviceName(h string) bool {
	if h == "" || !(h[0] >= 'a' && h[0] <= 'z' || h[0] == '_') {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Foreign is the first host of the place that is neither Local nor in
// allowed (host names, matched without case; a HOST:PORT entry matches
// its host), or "" when every host is one of them.
func (p *Place) Foreign(allowed []string) string {
	for _, a := range p.Hosts {
		h := Host(a)
		if Local(h) || contains(allowed, h) {
			continue
		}
		return h
	}
	return ""
}

func contains(allowed []string, host string) bool {
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if strings.EqualFold(Host(a), host) || strings.EqualFold(strings.Trim(a, "[]"), host) {
			return true
		}
	}
	return false
}
