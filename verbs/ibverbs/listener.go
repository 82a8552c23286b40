//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmablk/rdmablk/verbs"
)

// DefaultBacklog bounds connect requests not yet taken by Accept when
// ListenOptions.Backlog is 0.
const DefaultBacklog = 128

// listener is a passive rdma_cm_id (rdma_bind_addr + rdma_listen). The
// event goroutine queues connect requests on reqs; when the queue is full
// or the listener closed, the request is rejected.
type listener struct {
	p      *Provider
	id     *C.struct_rdma_cm_id
	handle uintptr
	addr   string
	reqs   chan *verbs.ConnRequest

	mu      sync.Mutex // guards closed and err
	closed  bool
	err     error
	closing chan struct{}
}

// Listen binds and listens on addr ("host:port"; port 0 picks one).
func (p *Provider) Listen(addr string, opts verbs.ListenOptions) (verbs.Listener, error) {
	var ss C.struct_sockaddr_storage
	if err := sockaddr(addr, &ss); err != nil {
		return nil, err
	}
	backlog := opts.Backlog
	if backlog <= 0 {
		backlog = DefaultBacklog
	}
	l := &listener{p: p, reqs: make(chan *verbs.ConnRequest, backlog), closing: make(chan struct{})}
	l.handle = p.register(l)
	if e := C.rb_create_id(p.ch, &l.id, C.uintptr_t(l.handle)); e != 0 {
		p.unregister(l.handle)
		return nil, errnoErr("rdma_create_id", e)
	}
	if r, err := C.rdma_bind_addr(l.id, (*C.struct_sockaddr)(unsafePtr(&ss))); r != 0 {
		l.destroyID()
		return nil, fmt.Errorf("ibverbs: rdma_bind_addr %s: %w", addr, mapErr(err))
	}
	if r, err := C.rdma_listen(l.id, C.int(backlog)); r != 0 {
		l.destroyID()
		return nil, fmt.Errorf("ibverbs: rdma_listen %s: %w", addr, mapErr(err))
	}
	l.addr = formatAddr(l.id, false)
	return l, nil
}

func (l *listener) destroyID() {
	l.p.unregister(l.handle)
	C.rdma_destroy_id(l.id)
}

// offer queues a request; false when the listener cannot take it.
func (l *listener) offer(r *verbs.ConnRequest) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	select {
	case l.reqs <- r:
		return true
	default:
		l.p.log.Warn("rdma_cm listener backlog full: rejecting", "addr", l.addr)
		return false
	}
}

// event handles events of the listening ID itself.
func (l *listener) event(e cmEvent) {
	if e.typ == C.RDMA_CM_EVENT_DEVICE_REMOVAL {
		l.mu.Lock()
		l.err = verbs.ErrDeviceRemoved
		l.mu.Unlock()
		l.p.log.Warn("rdma_cm listener: device removed", "addr", l.addr)
	}
}

func (l *listener) Accept(ctx context.Context) (*verbs.ConnRequest, error) {
	l.mu.Lock()
	closed, err := l.closed, l.err
	l.mu.Unlock()
	if closed {
		return nil, verbs.ErrClosed
	}
	if err != nil {
		return nil, err
	}
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.closing:
		return nil, verbs.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *listener) Addr() string { return l.addr }

// Close stops listening; established connections are unaffected and
// requests not yet accepted are rejected.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return verbs.ErrClosed
	}
	l.closed = true
	close(l.closing)
	l.mu.Unlock()
	l.destroyID()
	for {
		select {
		case r := <-l.reqs:
			r.ID.Reject(nil)
			r.ID.Close()
		default:
			return nil
		}
	}
}
