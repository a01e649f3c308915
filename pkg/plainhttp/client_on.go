//go:build !nohttpclient

package plainhttp

// plainOff: the plain client makes the deliveries it can. Built with
// -tags nohttpclient, net/http makes them all: the variant its benchmark
// is measured beside (docs/performance.md).
const plainOff = false
