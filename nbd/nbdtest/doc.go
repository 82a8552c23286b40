// Package nbdtest is a small NBD client for tests: the fixed newstyle
// handshake with NBD_OPT_GO, then concurrent READ, WRITE (with FUA),
// FLUSH, TRIM and WRITE_ZEROES with simple replies, and DISC. It is
// written independently of the server in package nbd, from the protocol
// document, so each checks the other.
//
// A Client is safe for concurrent use; every call blocks until its reply.
// Read's p is written by the reply reader goroutine and belongs to the
// client until Read returns. Errors from the server come back as *Error
// carrying the errno. Reads is a load generator for benchmarks: pipelined
// reads on a connection in the transmission phase, without allocating.
package nbdtest
