// Package tcpzc sends a TCP connection's large writes without copying
// them: io_uring's zero-copy sendmsg (IORING_OP_SENDMSG_ZC, Linux 6.1),
// whose notices come back on a small ring of the connection's own, never
// on the socket's error queue (docs/tcp-zero-copy.md says why). Both
// NVMe/TCP ends use it: the target for C2HData (target/tcp), the host
// for command capsules with their data (initiator).
//
// # Ownership
//
// A Sender belongs to one connection. Its mutex guards it: the
// connection's writer of the moment sends and seals records, any
// goroutine may reap notices, the connection's end closes it. The caller
// keeps every byte it sent reachable and unchanged until the kernel is
// done with it: the target holds a write's slots until the record's
// notices are in (the release callback); the host reuses a command's
// buffers only after the command's response, which the target sends only
// after it read the command, so TCP acknowledged those bytes and the
// kernel never sends them again (the notices then only bound the ring).
//
// # Goroutines
//
// None per Sender. A Sender closed while notices are outstanding (a peer
// that stopped acknowledging) goes to a package janitor goroutine, which
// reaps it every second and frees it when the kernel lets go; it runs
// only while it holds one.
package tcpzc
