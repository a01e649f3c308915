//go:build nohttpclient

package plainhttp

// plainOff: built with -tags nohttpclient, net/http makes every delivery,
// the variant the plain client's benchmark is measured beside.
const plainOff = true
