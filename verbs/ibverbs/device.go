//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/verbs"
)

// ibvContext is the process-wide state of one ibv_context. librdmacm opens
// each device once per process and shares the context between every
// provider, so its asynchronous event fd is served by one goroutine for
// the life of the process, and CQ handles are unique process-wide.
type ibvContext struct {
	ctx  *C.struct_ibv_context
	name string
	attr verbs.DeviceAttr // as the device reports it
	afd  *evfd
	log  *slog.Logger

	mu  sync.Mutex // guards cqs
	cqs map[uintptr]*cq
}

var (
	contextsMu sync.Mutex // guards contexts
	contexts   = map[*C.struct_ibv_context]*ibvContext{}
	cqHandles  atomic.Uintptr
)

// contextOf returns the shared state of ctx, opening it on first use.
func contextOf(ctx *C.struct_ibv_context, log *slog.Logger) (*ibvContext, error) {
	contextsMu.Lock()
	defer contextsMu.Unlock()
	if c := contexts[ctx]; c != nil {
		return c, nil
	}
	c, err := openContext(ctx, log)
	if err != nil {
		return nil, err
	}
	contexts[ctx] = c
	return c, nil
}

// device is a provider's view of an ibvContext: the limits it reports and
// enforces may be capped by Options.
type device struct {
	p    *Provider
	c    *ibvContext
	ctx  *C.struct_ibv_context
	name string
	attr verbs.DeviceAttr
}

func newDevice(p *Provider, ctx *C.struct_ibv_context) (*device, error) {
	c, err := contextOf(ctx, p.log)
	if err != nil {
		return nil, err
	}
	d := &device{p: p, c: c, ctx: ctx, name: c.name, attr: c.attr}
	if p.opts.MaxQPWR > 0 {
		d.attr.MaxQPWR = min(d.attr.MaxQPWR, p.opts.MaxQPWR)
	}
	if p.opts.MaxCQE > 0 {
		d.attr.MaxCQE = min(d.attr.MaxCQE, p.opts.MaxCQE)
	}
	return d, nil
}

func openContext(ctx *C.struct_ibv_context, log *slog.Logger) (*ibvContext, error) {
	d := &ibvContext{ctx: ctx, name: C.GoString(C.ibv_get_device_name(ctx.device)),
		cqs: map[uintptr]*cq{}, log: log}
	var a C.struct_ibv_device_attr
	if e := C.rb_query_device(ctx, &a); e != 0 {
		return nil, errnoErr("ibv_query_device "+d.name, e)
	}
	d.attr = verbs.DeviceAttr{
		FWVersion:       C.GoString(&a.fw_ver[0]),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		MaxMRSize:       uint64(a.max_mr_size),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		MaxSGE:          int(a.max_sge),
		MaxSGERd:        int(a.max_sge_rd),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxPD:           int(a.max_pd),
		MaxQPRdAtom:     int(a.max_qp_rd_atom),
		MaxQPInitRdAtom: int(a.max_qp_init_rd_atom),
		MaxSRQ:          int(a.max_srq),
		NumCompVectors:  int(ctx.num_comp_vectors),
	}
	if d.attr.MaxSGERd <= 0 || d.attr.MaxSGERd > d.attr.MaxSGE {
		d.attr.MaxSGERd = d.attr.MaxSGE // devices that report 0 read SGEs as sends
	}
	if d.attr.NumCompVectors < 1 {
		d.attr.NumCompVectors = 1
	}
	flags := uint64(a.device_cap_flags)
	if flags&C.IBV_DEVICE_MEM_MGT_EXTENSIONS != 0 {
		d.attr.Caps |= verbs.CapMemMgtExtensions
		if !noUserSendWithInv(d.name) {
			d.attr.Caps |= verbs.CapSendWithInv
		}
	}
	if flags&C.IBV_DEVICE_RC_RNR_NAK_GEN != 0 {
		d.attr.Caps |= verbs.CapRNRNakGen
	}
	if d.attr.MaxSRQ > 0 {
		d.attr.Caps |= verbs.CapSRQ
	}
	// ibv_device_attr has no inline limit: ask the provider what it grants
	// a QP with every send SGE.
	d.attr.MaxInlineData = int(C.rb_probe_inline(ctx, C.int(d.attr.MaxSGE), C.int(min(d.attr.MaxQPWR, 16))))

	afd, err := newEvfd(ctx.async_fd, d.name+" async")
	if err != nil {
		return nil, err
	}
	d.afd = afd
	go d.asyncLoop()
	return d, nil
}

func (d *ibvContext) addCQ(c *cq) {
	d.mu.Lock()
	d.cqs[c.handle] = c
	d.mu.Unlock()
}

func (d *ibvContext) removeCQ(c *cq) {
	d.mu.Lock()
	delete(d.cqs, c.handle)
	d.mu.Unlock()
}

// noUserSendWithInv names devices whose userspace provider rejects
// IBV_WR_SEND_WITH_INV although the device reports memory-management
// extensions (the kernel may use them; userspace may not): VMware PVRDMA.
func noUserSendWithInv(name string) bool {
	return strings.HasPrefix(name, "vmw_pvrdma")
}

func (d *device) Name() string           { return d.name }
func (d *device) Attr() verbs.DeviceAttr { return d.attr }

// asyncLoop serves ibv_get_async_event: a CQ error marks the CQ overrun
// and moves its QPs to the error state; other events are logged.
func (d *ibvContext) asyncLoop() {
	var ev C.struct_rb_async_ev
	for {
		err := d.afd.wait(func(uintptr) bool {
			return C.rb_get_async_event(d.ctx, &ev) == 0
		})
		if err != nil {
			return
		}
		typ := C.enum_ibv_event_type(ev._type)
		switch typ {
		case C.IBV_EVENT_CQ_ERR:
			d.mu.Lock()
			c := d.cqs[uintptr(ev.cq_handle)]
			d.mu.Unlock()
			if c != nil {
				c.overran()
			}
		case C.IBV_EVENT_COMM_EST, C.IBV_EVENT_SQ_DRAINED, C.IBV_EVENT_QP_LAST_WQE_REACHED, C.IBV_EVENT_PORT_ACTIVE,
			C.IBV_EVENT_GID_CHANGE, C.IBV_EVENT_LID_CHANGE, C.IBV_EVENT_PKEY_CHANGE, C.IBV_EVENT_CLIENT_REREGISTER:
			// Informational.
		default:
			d.log.Warn("RDMA async event", "device", d.name, "event", C.GoString(C.ibv_event_type_str(typ)),
				"qpn", uint32(ev.qp_num))
		}
	}
}

func (d *device) AllocPD() (verbs.ProtectionDomain, error) {
	pd := C.ibv_alloc_pd(d.ctx)
	if pd == nil {
		return nil, fmt.Errorf("ibverbs: ibv_alloc_pd on %s failed", d.name)
	}
	return &protectionDomain{dev: d, pd: pd}, nil
}

func (d *device) CreateCQ(cqe int, vector int) (verbs.CompletionQueue, error) {
	if cqe < 1 || cqe > d.attr.MaxCQE {
		return nil, fmt.Errorf("%w: CQ of %d entries (device max %d)", verbs.ErrInvalid, cqe, d.attr.MaxCQE)
	}
	if vector < 0 || vector >= d.attr.NumCompVectors {
		return nil, fmt.Errorf("%w: completion vector %d (device has %d)", verbs.ErrInvalid, vector, d.attr.NumCompVectors)
	}
	return newCQ(d, cqe, vector)
}
