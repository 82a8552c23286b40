//go:build ibverbs

package ibverbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// IB CM reject reason of a consumer reject (rdma_reject): REJECTED events
// with this status carry the peer application's private data.
const rejectConsumerDefined = 28

// Address and route resolution timeouts passed to librdmacm (ms).
const resolveTimeoutMs = 2000

// connID is an rdma_cm_id with at most one QP. The event goroutine
// delivers control events (address/route resolved, established, rejected,
// errors) on events, and handles DISCONNECTED and DEVICE_REMOVAL itself:
// the QP moves to the error state and Done closes.
type connID struct {
	p      *Provider
	id     *C.struct_rdma_cm_id
	handle uintptr
	events chan cmEvent

	mu           sync.Mutex // guards the fields below
	dev          *device
	qp           *queuePair
	connected    bool
	disconnected bool
	closed       bool
	local        string
	remote       string
	err          error
	done         chan struct{}
}

func newConnID(p *Provider, id *C.struct_rdma_cm_id) *connID {
	c := &connID{p: p, id: id, events: make(chan cmEvent, 8), done: make(chan struct{})}
	c.handle = p.register(c)
	if id != nil {
		C.rb_set_handle(id, C.uintptr_t(c.handle))
		c.dev, _ = p.device(id.verbs)
	}
	return c
}

// Resolve creates an active ID and resolves addr and the route to it.
func (p *Provider) Resolve(ctx context.Context, addr string, opts verbs.ResolveOptions) (verbs.ConnID, error) {
	var dst, src C.struct_sockaddr_storage
	if err := sockaddr(addr, &dst); err != nil {
		return nil, err
	}
	var srcp *C.struct_sockaddr
	if opts.LocalAddr != "" {
		if err := sockaddr(opts.LocalAddr, &src); err != nil {
			return nil, err
		}
		srcp = (*C.struct_sockaddr)(unsafePtr(&src))
	}
	c := newConnID(p, nil)
	if e := C.rb_create_id(p.ch, &c.id, C.uintptr_t(c.handle)); e != 0 {
		p.unregister(c.handle)
		return nil, errnoErr("rdma_create_id", e)
	}
	fail := func(err error) (verbs.ConnID, error) {
		c.Close()
		return nil, err
	}
	if r, err := C.rdma_resolve_addr(c.id, srcp, (*C.struct_sockaddr)(unsafePtr(&dst)), resolveTimeoutMs); r != 0 {
		return fail(fmt.Errorf("%w: rdma_resolve_addr %s: %w", verbs.ErrUnreachable, addr, mapErr(err)))
	}
	if err := c.expect(ctx, C.RDMA_CM_EVENT_ADDR_RESOLVED, "address resolution of "+addr); err != nil {
		return fail(err)
	}
	if r, err := C.rdma_resolve_route(c.id, resolveTimeoutMs); r != 0 {
		return fail(fmt.Errorf("%w: rdma_resolve_route %s: %w", verbs.ErrUnreachable, addr, mapErr(err)))
	}
	if err := c.expect(ctx, C.RDMA_CM_EVENT_ROUTE_RESOLVED, "route resolution to "+addr); err != nil {
		return fail(err)
	}
	dev, err := p.device(c.id.verbs)
	if err != nil {
		return fail(err)
	}
	c.mu.Lock()
	c.dev = dev
	c.local, c.remote = formatAddr(c.id, false), formatAddr(c.id, true)
	c.mu.Unlock()
	return c, nil
}

// expect waits for one event of type want; any other is an error.
func (c *connID) expect(ctx context.Context, want C.int, what string) error {
	e, err := waitEvent(ctx, c.events)
	if err != nil {
		return err
	}
	if e.typ != want {
		return fmt.Errorf("%w: %s: %s (status %d)", verbs.ErrUnreachable, what, e, e.status)
	}
	return nil
}

// event is called by the event goroutine.
func (c *connID) event(e cmEvent) {
	switch e.typ {
	case C.RDMA_CM_EVENT_DISCONNECTED:
		c.finish(verbs.ErrDisconnected)
	case C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		c.finish(verbs.ErrDeviceRemoved)
	case C.RDMA_CM_EVENT_TIMEWAIT_EXIT, C.RDMA_CM_EVENT_ADDR_CHANGE:
		return
	}
	select {
	case c.events <- e:
	default:
		c.p.log.Debug("rdma_cm event dropped: nobody waits", "event", e.String())
	}
}

// finish ends the connection with err (first reason wins): the QP moves
// to the error state, so its outstanding work flushes, and Done closes.
func (c *connID) finish(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	qp := c.qp
	close(c.done)
	c.mu.Unlock()
	if qp != nil {
		qp.toError()
	}
}

func (c *connID) Device() verbs.Device {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dev == nil {
		return nil
	}
	return c.dev
}

func (c *connID) CreateQP(pd verbs.ProtectionDomain, attr verbs.QPInitAttr) (verbs.QueuePair, error) {
	p, ok := pd.(*protectionDomain)
	scq, ok2 := attr.SendCQ.(*cq)
	rcq, ok3 := attr.RecvCQ.(*cq)
	if !ok || !ok2 || !ok3 {
		return nil, fmt.Errorf("%w: PD or CQs of another provider", verbs.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, verbs.ErrClosed
	}
	if c.qp != nil {
		return nil, fmt.Errorf("%w: the ID already has a QP", verbs.ErrInvalid)
	}
	d := c.dev
	if d == nil || p.dev != d || scq.dev != d || rcq.dev != d {
		return nil, fmt.Errorf("%w: PD, CQs and ID on different devices", verbs.ErrInvalid)
	}
	a, cp := d.attr, attr.Cap
	if cp.MaxSendWR < 1 || cp.MaxSendWR > a.MaxQPWR || cp.MaxRecvWR < 1 || cp.MaxRecvWR > a.MaxQPWR ||
		cp.MaxSendSGE < 0 || cp.MaxSendSGE > a.MaxSGE || cp.MaxRecvSGE < 0 || cp.MaxRecvSGE > a.MaxSGE ||
		cp.MaxInlineData < 0 || cp.MaxInlineData > a.MaxInlineData {
		return nil, fmt.Errorf("%w: QP capabilities %+v beyond the device's", verbs.ErrInvalid, cp)
	}
	if err := p.use(); err != nil {
		return nil, err
	}
	q := &queuePair{id: c, pd: p, scq: scq, rcq: rcq, maxSGERd: a.MaxSGERd,
		sendInv: a.Caps.Has(verbs.CapSendWithInv)}
	if err := scq.attach(q); err != nil {
		p.release()
		return nil, err
	}
	if err := rcq.attach(q); err != nil {
		scq.detach(q)
		p.release()
		return nil, err
	}
	ccap := C.struct_ibv_qp_cap{
		max_send_wr: C.uint32_t(cp.MaxSendWR), max_recv_wr: C.uint32_t(cp.MaxRecvWR),
		max_send_sge: C.uint32_t(cp.MaxSendSGE), max_recv_sge: C.uint32_t(cp.MaxRecvSGE),
		max_inline_data: C.uint32_t(cp.MaxInlineData),
	}
	sig := C.int(0)
	if attr.SignalAll {
		sig = 1
	}
	if e := C.rb_create_qp(c.id, p.pd, scq.cq, rcq.cq, &ccap, sig); e != 0 {
		scq.detach(q)
		rcq.detach(q)
		p.release()
		return nil, errnoErr("rdma_create_qp", e)
	}
	q.qp = c.id.qp
	q.num = uint32(q.qp.qp_num)
	q.cap = verbs.QPCap{
		MaxSendWR: int(ccap.max_send_wr), MaxRecvWR: int(ccap.max_recv_wr),
		MaxSendSGE: int(ccap.max_send_sge), MaxRecvSGE: int(ccap.max_recv_sge),
		MaxInlineData: int(ccap.max_inline_data),
	}
	q.allocScratch()
	q.sq, q.rq = newRing(q.cap.MaxSendWR), newRing(q.cap.MaxRecvWR)
	scq.index(q)
	if rcq != scq {
		rcq.index(q)
	}
	c.qp = q
	if c.err != nil {
		q.state.Store(qpError)
	}
	return q, nil
}

func (c *connID) QP() verbs.QueuePair {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qp == nil {
		return nil
	}
	return c.qp
}

// destroyQP destroys q if it is still this ID's QP.
func (c *connID) destroyQP(q *queuePair) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.qp != q {
		return verbs.ErrClosed
	}
	c.qp = nil
	q.destroy(c.id)
	return nil
}

// checkParam validates what librdmacm would refuse with EINVAL, with a
// clearer message.
func (c *connID) checkParam(p verbs.ConnParam) error {
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return fmt.Errorf("%w: %d bytes of private data (max %d)", verbs.ErrInvalid, len(p.PrivateData), verbs.MaxPrivateData)
	}
	c.mu.Lock()
	d, qp := c.dev, c.qp
	c.mu.Unlock()
	if d == nil || qp == nil {
		return fmt.Errorf("%w: create the QP before connecting", verbs.ErrInvalid)
	}
	if int(p.InitiatorDepth) > d.attr.MaxQPInitRdAtom || int(p.ResponderResources) > d.attr.MaxQPRdAtom {
		return fmt.Errorf("%w: initiator depth %d / responder resources %d beyond the device's %d / %d",
			verbs.ErrInvalid, p.InitiatorDepth, p.ResponderResources, d.attr.MaxQPInitRdAtom, d.attr.MaxQPRdAtom)
	}
	return nil
}

func (c *connID) connectCall(p verbs.ConnParam, accept bool) error {
	var pd unsafe.Pointer
	if len(p.PrivateData) > 0 {
		pd = C.CBytes(p.PrivateData)
		defer C.free(pd)
	}
	flow, acc := C.int(0), C.int(0)
	if p.FlowControl {
		flow = 1
	}
	what := "rdma_connect"
	if accept {
		acc, what = 1, "rdma_accept"
	}
	if e := C.rb_connect(c.id, (*C.uint8_t)(pd), C.int(len(p.PrivateData)), C.int(p.ResponderResources),
		C.int(p.InitiatorDepth), C.int(p.RetryCount), C.int(p.RNRRetryCount), flow, acc); e != 0 {
		return errnoErr(what, e)
	}
	return nil
}

// waitConn waits for the event that ends Connect or Accept; if the ID is
// closed or disconnected meanwhile, it returns that reason.
func (c *connID) waitConn(ctx context.Context) (cmEvent, error) {
	select {
	case e := <-c.events:
		return e, nil
	case <-ctx.Done():
		return cmEvent{}, ctx.Err()
	case <-c.done:
		select {
		case e := <-c.events:
			return e, nil
		default:
			return cmEvent{}, c.Err()
		}
	}
}

// established records the connection.
func (c *connID) established() {
	c.mu.Lock()
	c.connected = true
	c.local, c.remote = formatAddr(c.id, false), formatAddr(c.id, true)
	qp := c.qp
	c.mu.Unlock()
	if qp != nil {
		qp.state.CompareAndSwap(qpInit, qpConnected)
	}
}

// connectError maps a terminal event while connecting or accepting.
func connectError(e cmEvent) error {
	switch e.typ {
	case C.RDMA_CM_EVENT_REJECTED:
		return &verbs.RejectError{PrivateData: e.param.PrivateData, Consumer: e.status == rejectConsumerDefined}
	case C.RDMA_CM_EVENT_DISCONNECTED:
		return verbs.ErrDisconnected
	case C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		return verbs.ErrDeviceRemoved
	}
	return fmt.Errorf("%w: %s (status %d)", verbs.ErrUnreachable, e, e.status)
}

func (c *connID) Connect(ctx context.Context, p verbs.ConnParam) (verbs.ConnParam, error) {
	if err := c.checkParam(p); err != nil {
		return verbs.ConnParam{}, err
	}
	if err := c.connectCall(p, false); err != nil {
		return verbs.ConnParam{}, err
	}
	e, err := c.waitConn(ctx)
	if err != nil {
		return verbs.ConnParam{}, err
	}
	if e.typ != C.RDMA_CM_EVENT_ESTABLISHED {
		return verbs.ConnParam{}, connectError(e)
	}
	c.established()
	return e.param, nil
}

func (c *connID) Accept(ctx context.Context, p verbs.ConnParam) error {
	if err := c.checkParam(p); err != nil {
		return err
	}
	if err := c.connectCall(p, true); err != nil {
		return err
	}
	e, err := c.waitConn(ctx)
	if err != nil {
		return err
	}
	if e.typ != C.RDMA_CM_EVENT_ESTABLISHED {
		return connectError(e)
	}
	c.established()
	return nil
}

func (c *connID) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxRejectPrivateData {
		return fmt.Errorf("%w: %d bytes of reject private data (max %d)", verbs.ErrInvalid, len(privateData), verbs.MaxRejectPrivateData)
	}
	var pd unsafe.Pointer
	if len(privateData) > 0 {
		pd = C.CBytes(privateData)
		defer C.free(pd)
	}
	if r, err := C.rdma_reject(c.id, pd, C.uint8_t(len(privateData))); r != 0 {
		return fmt.Errorf("ibverbs: rdma_reject: %w", mapErr(err))
	}
	return nil
}

func (c *connID) Disconnect() error {
	c.mu.Lock()
	if c.disconnected || c.closed {
		c.mu.Unlock()
		return nil
	}
	c.disconnected = true
	connected := c.connected
	c.mu.Unlock()
	if connected {
		C.rdma_disconnect(c.id) // also moves the QP to the error state
	}
	c.finish(verbs.ErrDisconnected)
	return nil
}

func (c *connID) Done() <-chan struct{} { return c.done }

func (c *connID) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *connID) LocalAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.local
}

func (c *connID) RemoteAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.remote
}

// Close disconnects, destroys the QP and the ID.
func (c *connID) Close() error {
	if err := c.Disconnect(); err != nil {
		return err
	}
	return c.destroy(verbs.ErrClosed)
}

// destroy destroys the QP and the ID (rdma_destroy_id waits until every
// event of the ID reported so far is acknowledged; the event goroutine
// acknowledges before dispatching, so this never waits on Go code).
func (c *connID) destroy(reason error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return verbs.ErrClosed
	}
	c.closed = true
	qp := c.qp
	c.qp = nil
	c.mu.Unlock()
	c.finish(reason)
	if qp != nil {
		qp.destroy(c.id)
	}
	c.p.unregister(c.handle)
	if r, err := C.rdma_destroy_id(c.id); r != 0 {
		return fmt.Errorf("ibverbs: rdma_destroy_id: %w", mapErr(err))
	}
	return nil
}
