package soft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/rdmablk/rdmablk/verbs"
)

// Private data sizes the receiver sees: RDMA CM over IB/RoCE delivers the
// whole private-data field of the CM message, zero-padded, whatever length
// the sender used.
const (
	reqPrivateDataSize = 56  // IB_CM_REQ_PRIVATE_DATA_SIZE minus the rdma_cm header
	repPrivateDataSize = 196 // IB_CM_REP_PRIVATE_DATA_SIZE
	rejPrivateDataSize = 148 // IB_CM_REJ_PRIVATE_DATA_SIZE
)

// useDeviceMax in ResponderResources / InitiatorDepth asks for the device
// maximum (RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH in librdmacm).
const useDeviceMax = 0xff

type idState uint8

const (
	idResolved   idState = iota // active: bound to the device, not connected
	idConnecting                // active: Connect in progress
	idRequested                 // passive: request delivered, awaiting Accept/Reject
	idAccepting                 // passive: Accept in progress
	idConnected                 // established (possibly disconnected since: see done)
	idFailed                    // connect failed, rejected, or request refused
	idClosed
)

// connID is a soft rdma_cm_id.
type connID struct {
	p      *Provider
	dev    *device
	active bool

	mu     sync.Mutex // guards the fields below
	state  idState
	qp     *qp
	conn   net.Conn     // during the handshake (passive: from the request on)
	fr     *frameReader // handshake reader/writer, handed to the QP
	fw     *frameWriter
	req    verbs.ConnParam // passive: the request as the application saw it
	laddr  string
	raddr  string
	doneMu sync.Mutex // leaf lock: guards err and the closing of done
	done   chan struct{}
	err    error
}

var _ verbs.ConnID = (*connID)(nil)

func newConnID(p *Provider, active bool) *connID {
	return &connID{p: p, dev: p.dev, active: active, done: make(chan struct{})}
}

func (id *connID) Device() verbs.Device { return id.dev }

// CreateQP creates the ID's RC QP; at most one per ID, before the
// connection is established.
func (id *connID) CreateQP(pd verbs.ProtectionDomain, attr verbs.QPInitAttr) (verbs.QueuePair, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.state != idResolved && id.state != idRequested {
		return nil, fmt.Errorf("%w: CreateQP in ID state %d", verbs.ErrInvalid, id.state)
	}
	if id.qp != nil {
		return nil, fmt.Errorf("%w: ID already has a QP", verbs.ErrInvalid)
	}
	q, err := id.dev.createQP(pd, attr)
	if err != nil {
		return nil, err
	}
	id.qp = q
	return q, nil
}

func (id *connID) QP() verbs.QueuePair {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.qp == nil {
		return nil
	}
	return id.qp
}

// depth resolves a requested READ depth: useDeviceMax means min(peer, max);
// anything else must not exceed max (EINVAL in librdmacm).
func depth(v, peer uint8, max int, what string) (int, error) {
	if v == useDeviceMax {
		return min(int(peer), max), nil
	}
	if int(v) > max {
		return 0, fmt.Errorf("%w: %s %d exceeds device max %d", verbs.ErrInvalid, what, v, max)
	}
	return int(v), nil
}

func padded(b []byte, n int) []byte {
	out := make([]byte, max(n, len(b)))
	copy(out, b)
	return out
}

// handshakeErr maps an I/O error of a handshake to the API's errors.
func handshakeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, errProtocol) {
		return fmt.Errorf("%w: %v", verbs.ErrUnreachable, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: peer closed the connection during the handshake", verbs.ErrDisconnected)
	}
	return fmt.Errorf("%w: %v", verbs.ErrDisconnected, err)
}

// Connect sends the connect request and waits for the reply. Parameters
// follow librdmacm: ResponderResources / InitiatorDepth above the device's
// MaxQPRdAtom / MaxQPInitRdAtom are ErrInvalid, 255 means the device max.
// The QP's ORD becomes the passive side's accepted ResponderResources and
// its IRD the accepted InitiatorDepth (each clamped to this device's
// limits); its RNR retry count is the one the passive side sent. The
// returned ConnParam shows those values from this side's point of view,
// with the reply's private data zero-padded to 196 bytes as RDMA CM does.
func (id *connID) Connect(ctx context.Context, p verbs.ConnParam) (verbs.ConnParam, error) {
	var none verbs.ConnParam
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return none, fmt.Errorf("%w: %d bytes of private data (max %d)", verbs.ErrInvalid, len(p.PrivateData), verbs.MaxPrivateData)
	}
	attr := &id.dev.attr
	rr, err := depth(p.ResponderResources, useDeviceMax, attr.MaxQPRdAtom, "responder resources")
	if err != nil {
		return none, err
	}
	ord, err := depth(p.InitiatorDepth, useDeviceMax, attr.MaxQPInitRdAtom, "initiator depth")
	if err != nil {
		return none, err
	}
	id.mu.Lock()
	if !id.active || id.state != idResolved || id.qp == nil {
		id.mu.Unlock()
		return none, fmt.Errorf("%w: Connect needs a resolved active ID with a QP", verbs.ErrInvalid)
	}
	id.state = idConnecting
	q := id.qp
	id.mu.Unlock()

	fail := func(err error) (verbs.ConnParam, error) {
		id.mu.Lock()
		if id.state == idConnecting {
			id.state = idFailed
		}
		id.conn = nil
		id.mu.Unlock()
		return none, err
	}
	conn, err := id.p.dial(ctx, id.raddr, id.laddr)
	if err != nil {
		return fail(err)
	}
	id.mu.Lock()
	if id.state == idClosed {
		id.mu.Unlock()
		conn.Close()
		return none, fmt.Errorf("%w: connection ID", verbs.ErrClosed)
	}
	id.conn = conn
	id.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { conn.Close() })
	param, err := id.connectOn(conn, q, p, rr, ord)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		var rej *verbs.RejectError
		if !errors.As(err, &rej) && !errors.Is(err, verbs.ErrInvalid) {
			err = handshakeErr(ctx, err)
		}
		return fail(err)
	}
	return param, nil
}

// connectOn runs the active side of the handshake on conn.
func (id *connID) connectOn(conn net.Conn, q *qp, p verbs.ConnParam, rr, ord int) (verbs.ConnParam, error) {
	var none verbs.ConnParam
	fw, fr := newFrameWriter(conn), newFrameReader(conn)
	sent := verbs.ConnParam{
		PrivateData:        p.PrivateData,
		ResponderResources: uint8(rr),
		InitiatorDepth:     uint8(ord),
		RetryCount:         min(p.RetryCount, 7),
		RNRRetryCount:      min(p.RNRRetryCount, 7),
		FlowControl:        p.FlowControl,
	}
	payload := appendCM(nil, q.num, &sent)
	if err := fw.frame(&header{typ: frameReq, length: uint32(len(payload))}, payload); err != nil {
		return none, err
	}
	if err := fw.flush(); err != nil {
		return none, err
	}
	var h header
	if err := fr.next(&h); err != nil {
		return none, err
	}
	body := make([]byte, h.length)
	if err := fr.full(body); err != nil {
		return none, err
	}
	switch h.typ {
	case frameRej:
		return none, &verbs.RejectError{PrivateData: padded(body, rejPrivateDataSize), Consumer: h.flags&flagConsumer != 0}
	case frameRep:
	default:
		return none, fmt.Errorf("%w: frame %d instead of REP", errProtocol, h.typ)
	}
	rep, err := decodeCM(body)
	if err != nil {
		return none, err
	}
	attr := &id.dev.attr
	myORD := min(int(rep.param.ResponderResources), attr.MaxQPInitRdAtom)
	myIRD := min(int(rep.param.InitiatorDepth), attr.MaxQPRdAtom)
	if err := fw.frame(&header{typ: frameRTU}); err != nil {
		return none, err
	}
	if err := fw.flush(); err != nil {
		return none, err
	}
	id.mu.Lock()
	if id.state != idConnecting {
		id.mu.Unlock()
		return none, fmt.Errorf("%w: connection ID", verbs.ErrClosed)
	}
	id.state = idConnected
	id.conn = nil
	id.laddr = conn.LocalAddr().String()
	id.mu.Unlock()
	lp := linkParams{ord: myORD, ird: myIRD, rnrRetry: rep.param.RNRRetryCount, onDown: id.linkDown}
	if err := q.attach(conn, fr, fw, lp); err != nil {
		id.linkDown(verbs.ErrDisconnected)
		return none, err
	}
	return verbs.ConnParam{
		PrivateData:        padded(rep.param.PrivateData, repPrivateDataSize),
		ResponderResources: uint8(myIRD),
		InitiatorDepth:     uint8(myORD),
		RetryCount:         rep.param.RetryCount,
		RNRRetryCount:      rep.param.RNRRetryCount,
		FlowControl:        rep.param.FlowControl,
	}, nil
}

// Accept accepts the request. ResponderResources (this side's IRD) and
// InitiatorDepth (this side's ORD) above the device limits are ErrInvalid;
// 255 means min(the request's value, device max), as librdmacm. The QP's
// RNR retry count is the one the active side sent. Accept returns once the
// active side confirmed (RTU).
func (id *connID) Accept(ctx context.Context, p verbs.ConnParam) error {
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return fmt.Errorf("%w: %d bytes of private data (max %d)", verbs.ErrInvalid, len(p.PrivateData), verbs.MaxPrivateData)
	}
	id.mu.Lock()
	if id.active || id.state != idRequested || id.qp == nil {
		id.mu.Unlock()
		return fmt.Errorf("%w: Accept needs a connect request with a QP", verbs.ErrInvalid)
	}
	attr := &id.dev.attr
	ird, err := depth(p.ResponderResources, id.req.ResponderResources, attr.MaxQPRdAtom, "responder resources")
	if err != nil {
		id.mu.Unlock()
		return err
	}
	ord, err := depth(p.InitiatorDepth, id.req.InitiatorDepth, attr.MaxQPInitRdAtom, "initiator depth")
	if err != nil {
		id.mu.Unlock()
		return err
	}
	id.state = idAccepting
	q, conn, fr, fw, rnr := id.qp, id.conn, id.fr, id.fw, id.req.RNRRetryCount
	id.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { conn.Close() })
	err = id.acceptOn(q, conn, fr, fw, p, ird, ord, rnr)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		conn.Close()
		id.mu.Lock()
		if id.state == idAccepting {
			id.state = idFailed
		}
		id.mu.Unlock()
		return handshakeErr(ctx, err)
	}
	return nil
}

func (id *connID) acceptOn(q *qp, conn net.Conn, fr *frameReader, fw *frameWriter, p verbs.ConnParam, ird, ord int, rnr uint8) error {
	sent := verbs.ConnParam{
		PrivateData:        p.PrivateData,
		ResponderResources: uint8(ird),
		InitiatorDepth:     uint8(ord),
		RetryCount:         min(p.RetryCount, 7),
		RNRRetryCount:      min(p.RNRRetryCount, 7),
		FlowControl:        p.FlowControl,
	}
	payload := appendCM(nil, q.num, &sent)
	if err := fw.frame(&header{typ: frameRep, length: uint32(len(payload))}, payload); err != nil {
		return err
	}
	if err := fw.flush(); err != nil {
		return err
	}
	var h header
	if err := fr.next(&h); err != nil {
		return err
	}
	if h.typ != frameRTU {
		return fmt.Errorf("%w: frame %d instead of RTU", errProtocol, h.typ)
	}
	id.mu.Lock()
	if id.state != idAccepting {
		id.mu.Unlock()
		return fmt.Errorf("%w: connection ID", verbs.ErrClosed)
	}
	id.state = idConnected
	id.conn, id.fr, id.fw = nil, nil, nil
	id.mu.Unlock()
	lp := linkParams{ord: ord, ird: ird, rnrRetry: rnr, onDown: id.linkDown}
	if err := q.attach(conn, fr, fw, lp); err != nil {
		id.linkDown(verbs.ErrDisconnected)
		return err
	}
	return nil
}

// Reject refuses the request with private data (at most
// verbs.MaxRejectPrivateData bytes); the active side's Connect returns
// *verbs.RejectError with Consumer true.
func (id *connID) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxRejectPrivateData {
		return fmt.Errorf("%w: %d bytes of reject private data (max %d)", verbs.ErrInvalid, len(privateData), verbs.MaxRejectPrivateData)
	}
	id.mu.Lock()
	if id.active || id.state != idRequested {
		id.mu.Unlock()
		return fmt.Errorf("%w: Reject needs a pending connect request", verbs.ErrInvalid)
	}
	id.state = idFailed
	conn, fw := id.conn, id.fw
	id.conn, id.fr, id.fw = nil, nil, nil
	id.mu.Unlock()
	err := sendReject(conn, fw, privateData, true)
	conn.Close()
	return err
}

// sendReject writes a REJ frame.
func sendReject(conn net.Conn, fw *frameWriter, privateData []byte, consumer bool) error {
	if fw == nil {
		fw = newFrameWriter(conn)
	}
	h := header{typ: frameRej, length: uint32(len(privateData))}
	if consumer {
		h.flags = flagConsumer
	}
	if err := fw.frame(&h, privateData); err != nil {
		return err
	}
	return fw.flush()
}

// Disconnect moves the QP to the error state and sends DISC; both sides'
// Done close with ErrDisconnected. Idempotent; a no-op unless connected.
func (id *connID) Disconnect() error {
	id.mu.Lock()
	q, st := id.qp, id.state
	id.mu.Unlock()
	if st == idConnected && q != nil {
		q.shutdown(true, verbs.ErrDisconnected)
	}
	return nil
}

// linkDown records why the connection ended and closes Done (first call wins).
func (id *connID) linkDown(err error) {
	id.doneMu.Lock()
	defer id.doneMu.Unlock()
	if id.err != nil {
		return
	}
	id.err = err
	close(id.done)
}

func (id *connID) Done() <-chan struct{} { return id.done }

func (id *connID) Err() error {
	id.doneMu.Lock()
	defer id.doneMu.Unlock()
	return id.err
}

func (id *connID) LocalAddr() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.laddr
}

func (id *connID) RemoteAddr() string {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.raddr
}

// Close disconnects (sending DISC), destroys the QP and the ID. An
// unanswered connect request is refused. Done closes with ErrClosed unless
// it had closed already.
func (id *connID) Close() error {
	return id.closeWith(verbs.ErrClosed, true)
}

// closeWith closes the ID; graceful sends DISC, otherwise the link is cut
// (device removal).
func (id *connID) closeWith(reason error, graceful bool) error {
	id.mu.Lock()
	if id.state == idClosed {
		id.mu.Unlock()
		return nil
	}
	prev := id.state
	id.state = idClosed
	q, conn, fw := id.qp, id.conn, id.fw
	id.conn, id.fr, id.fw = nil, nil, nil
	id.mu.Unlock()

	switch prev {
	case idRequested:
		sendReject(conn, fw, nil, false)
		conn.Close()
	case idConnecting, idAccepting:
		if conn != nil {
			conn.Close()
		}
	}
	id.linkDown(reason)
	if q != nil {
		if !graceful {
			q.shutdown(false, reason)
		}
		q.Close()
	}
	id.p.removeID(id)
	return nil
}
