package tcpzc

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// Counters are a user's zero-copy counters, shared by its Senders.
type Counters struct {
	// Sends counts the sends that went out zero-copy, Bytes their bytes.
	Sends, Bytes atomic.Uint64
	// Copied counts the notices in which the kernel said it copied the
	// data after all (Linux ≥ 6.2: a loopback peer, a device without
	// scatter-gather).
	Copied atomic.Uint64
	// Full counts the sends that copied instead because as many notices
	// were outstanding as the Sender's ring holds (the peer acknowledges
	// slower than the connection sends).
	Full atomic.Uint64
	// Abandoned counts Senders closed before the kernel let go of their
	// memory (a peer that stopped acknowledging): the janitor holds them.
	Abandoned atomic.Uint64
	// Overdue counts sends whose completion the kernel did not post
	// within the bound (it posts it inline): the connection failed them
	// with EIO instead of waiting on.
	Overdue atomic.Uint64
}

// CloseWait is how long a connection's end waits, in Sender.Close, for
// the notices of its zero-copy sends (the peer acknowledging the last
// data) before it leaves the Sender to the janitor.
const CloseWait = 2 * time.Second

// ErrOff: this send cannot go zero-copy (kernel without the opcode, a
// socket without zero-copy support, a closed Sender, too many notices
// outstanding); the caller writes with writev instead.
const ErrOff = syscall.Errno(0x7fffffff)

// AllowLoopback (tests) lets connections to or from a loopback address
// send zero-copy, and keep doing so although the kernel reports that it
// copies: it copies what it delivers locally anyway, so normally they do
// not (LocalPeer, Sender.Copies).
var AllowLoopback atomic.Bool

// LocalPeer reports whether the peer of nc is on a loopback address,
// where zero copy only costs (unless AllowLoopback).
func LocalPeer(nc net.Conn) bool {
	a, ok := nc.RemoteAddr().(*net.TCPAddr)
	return ok && a.IP.IsLoopback() && !AllowLoopback.Load()
}
