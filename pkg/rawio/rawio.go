// Package rawio reads and writes a connection's socket with system calls
// the Go scheduler is not told of, for a process whose side of an exchange
// is mostly waiting: redeliver's deliveries to a consumer and its reads of
// the consumer's database.
//
// A system call made the ordinary way (syscall.Syscall) tells the
// scheduler it is in progress, and on the one processor a replay into a
// target runs on, the runtime's monitor thread, asleep while nothing
// runs, is woken by it, then takes the processor from a call it finds in
// progress and hands it to another thread; on a virtual machine each of
// those context switches costs more than the call. A non-blocking socket's
// read and write never block, so they are made with syscall.RawSyscall,
// and the connection waits in the network poller as net.Conn does when its
// socket has nothing to read or no room to write.
//
// It imports no other package of this module.
package rawio

import "net"

// Conn returns c with its Read and Write made as raw system calls, where
// the system and the connection allow it (Linux; a TCP or Unix
// connection); otherwise c itself. Deadlines, Close and the errors are
// net.Conn's: a deadline passed is a timeout, a closed connection
// net.ErrClosed, a reset syscall.ECONNRESET, with net.Conn's wording.
func Conn(c net.Conn) net.Conn { return wrap(c) }
