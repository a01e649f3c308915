// Package plainhttp is the HTTP/1.1 client that makes the deliveries to
// an http:// consumer: kept-alive connections, each request written and
// its answer read in the delivery's own goroutine, with net/http's code
// writing the request and reading the answer. It owns the pool of
// connections, the deadline, and the first line of a 5xx answer's body;
// what a delivery and its answer mean is the caller's (pkg/external).
// Built with -tags nohttpclient, New returns nil and net/http makes every
// delivery, the variant the client's benchmark is measured beside.
//
// Of this module it imports only pkg/rawio, which reads and writes its
// sockets with raw system calls on Linux.
package plainhttp
