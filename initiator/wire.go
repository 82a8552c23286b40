package initiator

import (
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// wire is the transport of one queue: what carries command capsules,
// data and response capsules between the qpair's slot table and the
// controller. Two implement it: rdmaWire (an RC queue pair; data moves by
// the target's RDMA READ/WRITE of keyed SGLs) and tcpWire (an NVMe/TCP
// connection; data moves in PDUs, copied to and from the socket).
//
// Everything above the qpair — IOQueue, the admin queue, queueMux,
// Controller, Session, replay, multipath — sees only this interface, so
// it works the same over either transport.
//
// Every method except disconnect, connDone and connErr is called by the
// qpair's owner (serialised: an IOQueue's goroutine or the admin queue's
// mutex) and must not block, except flush, which may block on the
// network for as long as the transport needs to take the batch.
type wire interface {
	// sqe is slot i's SQE storage (registered memory over RDMA, the
	// slot's capsule PDU over TCP).
	sqe(i uint16) *nvme.SQE
	// dsmArea is slot i's 16-byte Dataset Management range area.
	dsmArea(i uint16) []byte
	// setData fills SGL1 of slot i's SQE e for n bytes of data: the
	// first n of b, or with b nil slot i's DSM area; n 0 means none.
	// toCtrl: host-to-controller data. capsule: the data may travel in
	// the command capsule if the controller accepts n bytes there.
	setData(i uint16, e *nvme.SQE, b *Buffer, n int, toCtrl, capsule bool)
	// queueSend adds slot i's capsule to the pending batch.
	queueSend(i uint16)
	// pending is the number of capsules queued and not yet flushed.
	pending() int
	// flush sends the pending batch; an error fails the qpair.
	flush() error
	// poll processes what arrived without blocking (calling the qpair's
	// sendDone and response) and returns the number of events.
	poll() int
	// arm asks for a signal on notify for the next arrival; events that
	// arrived before arm may not signal (poll again after arming).
	arm() error
	notify() <-chan struct{}
	// fdNotifier is the arrivals' event on a descriptor
	// (verbs.FDNotifier: an RDMA CQ's completion channel), for a
	// Submitter's goroutine that waits for them in its own poll set; nil
	// when the transport has none (NVMe/TCP: a reader goroutine).
	fdNotifier() verbs.FDNotifier
	// connDone is closed when the connection ends (peer, network,
	// protocol error); connErr then says why. Any goroutine.
	connDone() <-chan struct{}
	connErr() error
	// disconnect ends the connection so that the controller no longer
	// touches host memory and outstanding work ends. Any goroutine;
	// idempotent; it does not block on the owner.
	disconnect()
	// destroy frees the wire's resources once nobody uses it; it waits
	// for the wire's own goroutines (if any) to end.
	destroy() error
}
