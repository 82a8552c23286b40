//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/rdmablk/rdmablk/verbs"
)

// protectionDomain is ibv_pd. users counts its MRs and QPs: Close refuses
// while any is alive, as ibv_dealloc_pd does with EBUSY.
type protectionDomain struct {
	dev *device
	pd  *C.struct_ibv_pd

	mu     sync.Mutex // guards users and closed
	users  int
	closed bool
}

func (p *protectionDomain) use() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("%w: protection domain", verbs.ErrClosed)
	}
	p.users++
	return nil
}

func (p *protectionDomain) release() {
	p.mu.Lock()
	p.users--
	p.mu.Unlock()
}

func (p *protectionDomain) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return verbs.ErrClosed
	}
	if p.users > 0 {
		return fmt.Errorf("%w: protection domain still has %d MRs/QPs", verbs.ErrInvalid, p.users)
	}
	if e := C.ibv_dealloc_pd(p.pd); e != 0 {
		return errnoErr("ibv_dealloc_pd", e)
	}
	p.closed = true
	return nil
}

func (p *protectionDomain) RegisterMemory(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: empty memory region", verbs.ErrInvalid)
	}
	if access&^(verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead|verbs.AccessRemoteAtomic) != 0 {
		return nil, fmt.Errorf("%w: access %#x", verbs.ErrInvalid, access)
	}
	if access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && access&verbs.AccessLocalWrite == 0 {
		return nil, fmt.Errorf("%w: remote write/atomic access needs local write", verbs.ErrInvalid)
	}
	if uint64(len(buf)) > p.dev.attr.MaxMRSize {
		return nil, fmt.Errorf("%w: MR of %d bytes (device max %d)", verbs.ErrInvalid, len(buf), p.dev.attr.MaxMRSize)
	}
	if err := p.use(); err != nil {
		return nil, err
	}
	// The values of verbs.Access are those of IBV_ACCESS_*.
	mr, err := C.ibv_reg_mr(p.pd, addrOf(buf), C.size_t(len(buf)), C.int(access))
	if mr == nil {
		p.release()
		if en, ok := err.(syscall.Errno); ok {
			return nil, errnoErr(fmt.Sprintf("ibv_reg_mr (%d bytes)", len(buf)), C.int(en))
		}
		return nil, fmt.Errorf("ibverbs: ibv_reg_mr (%d bytes) failed", len(buf))
	}
	return &memoryRegion{pd: p, mr: mr, buf: buf, access: access}, nil
}

// memoryRegion is ibv_mr over caller memory.
type memoryRegion struct {
	pd     *protectionDomain
	mr     *C.struct_ibv_mr
	buf    []byte
	access verbs.Access

	mu     sync.Mutex // guards closed
	closed bool
}

func (m *memoryRegion) Buf() []byte          { return m.buf }
func (m *memoryRegion) Addr() uint64         { return uint64(uintptr(addrOf(m.buf))) }
func (m *memoryRegion) LKey() uint32         { return uint32(m.mr.lkey) }
func (m *memoryRegion) RKey() uint32         { return uint32(m.mr.rkey) }
func (m *memoryRegion) Access() verbs.Access { return m.access }

func (m *memoryRegion) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return verbs.ErrClosed
	}
	if e := C.ibv_dereg_mr(m.mr); e != 0 {
		return errnoErr("ibv_dereg_mr", e)
	}
	m.closed = true
	m.pd.release()
	return nil
}
