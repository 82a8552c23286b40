//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// Options configure New.
type Options struct {
	// Logger receives unexpected events (unknown IDs, async device
	// errors); default: discard.
	Logger *slog.Logger
	// MaxQPWR and MaxCQE, when positive, cap the device limits this
	// provider reports and enforces. rxe reports 2^20 work requests per
	// queue, whose queue memory at the maximum SGE count is about a GiB of
	// kernel memory; a consumer that sizes queues from Attr may want less.
	MaxQPWR, MaxCQE int
}

// Provider is the libibverbs + librdmacm verbs provider. It owns one
// rdma_cm event channel, served by one goroutine that copies, acknowledges
// and dispatches each event to its ConnID or Listener.
type Provider struct {
	opts Options
	log  *slog.Logger
	ch   *C.struct_rdma_event_channel
	efd  *evfd

	mu sync.Mutex // guards the fields below
	// ids maps the handle stored in rdma_cm_id.context to its owner (a
	// *connID or a *listener).
	ids    map[uintptr]any
	next   uintptr
	devs   map[*C.struct_ibv_context]*device
	closed bool

	loopDone chan struct{}
	// closing is closed by Close (wakes the event loop's back-off).
	closing       chan struct{}
	cmEventErrors atomic.Uint64
}

var _ verbs.Provider = (*Provider)(nil)

// New opens the provider. It returns an error wrapping verbs.ErrNoDevice
// when the host has no RDMA support (libibverbs reports ENOSYS, librdmacm
// ENODEV) or no RDMA device.
func New(opts Options) (*Provider, error) {
	var n C.int
	if e := C.rb_probe_devices(&n); e != 0 {
		return nil, errnoErr("ibv_get_device_list", e)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: ibv_get_device_list found none", verbs.ErrNoDevice)
	}
	var e C.int
	ch := C.rb_create_event_channel(&e)
	if ch == nil {
		return nil, errnoErr("rdma_create_event_channel", e)
	}
	efd, err := newEvfd(ch.fd, "rdma_cm")
	if err != nil {
		C.rdma_destroy_event_channel(ch)
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Provider{
		opts: opts, log: log, ch: ch, efd: efd,
		ids: map[uintptr]any{}, next: 1,
		devs:     map[*C.struct_ibv_context]*device{},
		loopDone: make(chan struct{}),
		closing:  make(chan struct{}),
	}
	go p.eventLoop()
	return p, nil
}

// Name returns "ibverbs".
func (p *Provider) Name() string { return "ibverbs" }

// Devices lists the devices librdmacm opened (rdma_get_devices); their
// contexts are the ones CM IDs are bound to.
func (p *Provider) Devices() ([]verbs.Device, error) {
	var n C.int
	list := C.rdma_get_devices(&n)
	if list == nil {
		return nil, fmt.Errorf("%w: rdma_get_devices", verbs.ErrNoDevice)
	}
	defer C.rdma_free_devices(list)
	ctxs := unsafe.Slice(list, int(n))
	var out []verbs.Device
	for _, ctx := range ctxs {
		d, err := p.device(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: rdma_get_devices found none", verbs.ErrNoDevice)
	}
	return out, nil
}

// device returns the device wrapper of ctx, creating it on first use.
func (p *Provider) device(ctx *C.struct_ibv_context) (*device, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: CM ID has no device", verbs.ErrNoDevice)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := p.devs[ctx]; d != nil {
		return d, nil
	}
	d, err := newDevice(p, ctx)
	if err != nil {
		return nil, err
	}
	p.devs[ctx] = d
	return d, nil
}

// register assigns a handle to owner.
func (p *Provider) register(owner any) uintptr {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.next
	p.next++
	p.ids[h] = owner
	return h
}

func (p *Provider) unregister(h uintptr) {
	p.mu.Lock()
	delete(p.ids, h)
	p.mu.Unlock()
}

func (p *Provider) lookup(h uintptr) any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[h]
}

// cmEvent is a copied, already acknowledged rdma_cm event.
type cmEvent struct {
	typ    C.int
	status int
	param  verbs.ConnParam
}

func (e cmEvent) String() string {
	return C.GoString(C.rdma_event_str(uint32(e.typ)))
}

// eventLoop serves the event channel until Close. An error reading an
// event never ends it (listeners would stop hearing connect requests
// silently): it is logged, rate-limited, and retried after a back-off
// (eventRetry).
func (p *Provider) eventLoop() {
	defer close(p.loopDone)
	var ev C.struct_rb_cm_ev
	retry := eventRetry{log: p.log}
	for {
		var failed C.int
		err := p.efd.wait(func(uintptr) bool {
			e := C.rb_get_cm_event(p.ch, &ev)
			if e != 0 {
				if isEAGAIN(e) {
					return false // park until the channel is readable
				}
				failed = e
			}
			return true
		})
		if err != nil {
			return
		}
		if failed != 0 {
			p.cmEventErrors.Add(1)
			t := time.NewTimer(retry.failed(syscall.Errno(failed), time.Now()))
			select {
			case <-t.C:
			case <-p.closing:
				t.Stop()
				return
			}
			continue
		}
		retry.ok()
		p.dispatch(&ev)
	}
}

// CMEventErrors counts the errors reading the rdma_cm event channel that
// the event loop met and retried.
func (p *Provider) CMEventErrors() uint64 { return p.cmEventErrors.Load() }

func (p *Provider) dispatch(ev *C.struct_rb_cm_ev) {
	e := cmEvent{typ: ev.event, status: int(ev.status), param: verbs.ConnParam{
		ResponderResources: uint8(ev.responder_resources),
		InitiatorDepth:     uint8(ev.initiator_depth),
		RetryCount:         uint8(ev.retry_count),
		RNRRetryCount:      uint8(ev.rnr_retry_count),
		FlowControl:        ev.flow_control != 0,
	}}
	if ev.pd_len > 0 {
		e.param.PrivateData = C.GoBytes(unsafe.Pointer(&ev.pd[0]), ev.pd_len)
	}
	if ev.event == C.RDMA_CM_EVENT_CONNECT_REQUEST {
		ln, _ := p.lookup(uintptr(ev.listen_handle)).(*listener)
		p.connectRequest(ln, ev.id, e)
		return
	}
	switch o := p.lookup(uintptr(ev.handle)).(type) {
	case *connID:
		o.event(e)
	case *listener:
		o.event(e)
	default:
		p.log.Debug("rdma_cm event for an unknown ID", "event", e.String())
	}
}

// connectRequest wraps the new ID of a connect request and queues it on
// its listener; without a listener taking it, the request is rejected.
func (p *Provider) connectRequest(ln *listener, id *C.struct_rdma_cm_id, e cmEvent) {
	if ln == nil {
		C.rdma_reject(id, nil, 0)
		C.rdma_destroy_id(id)
		return
	}
	c := newConnID(p, id)
	c.local, c.remote = formatAddr(id, false), formatAddr(id, true)
	if !ln.offer(&verbs.ConnRequest{ID: c, Param: e.param}) {
		C.rdma_reject(id, nil, 0)
		c.destroy(verbs.ErrClosed)
	}
}

// Close stops the event goroutine and destroys the event channel. Close
// every ID and listener first.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return verbs.ErrClosed
	}
	p.closed = true
	p.mu.Unlock()
	close(p.closing)
	p.efd.close()
	<-p.loopDone
	C.rdma_destroy_event_channel(p.ch)
	return nil
}

// waitEvent waits for the next control event of an ID.
func waitEvent(ctx context.Context, ch <-chan cmEvent) (cmEvent, error) {
	select {
	case e := <-ch:
		return e, nil
	case <-ctx.Done():
		return cmEvent{}, ctx.Err()
	}
}
