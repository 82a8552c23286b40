package soft

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// protectionDomain is a soft ibv_pd.
type protectionDomain struct {
	dev *device

	mu     sync.Mutex // guards closed and users
	closed bool
	users  int // MRs and QPs using the PD
}

var _ verbs.ProtectionDomain = (*protectionDomain)(nil)

const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic

// pageSize is the page granularity of the PVRDMA page-directory limit.
const pageSize = 4096

// RegisterMemory registers buf. Rules as ibv_reg_mr: an empty buffer,
// unknown access bits, or a remote-write / remote-atomic right without
// AccessLocalWrite are ErrInvalid; so is a buffer beyond MaxMRSize or, for
// profiles with MaxMRPages, one spanning more 4 KiB pages than that.
func (pd *protectionDomain) RegisterMemory(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: empty memory region", verbs.ErrInvalid)
	}
	if access&^allAccess != 0 {
		return nil, fmt.Errorf("%w: unknown access bits %#x", verbs.ErrInvalid, uint32(access&^allAccess))
	}
	if access&(verbs.AccessRemoteWrite|verbs.AccessRemoteAtomic) != 0 && access&verbs.AccessLocalWrite == 0 {
		return nil, fmt.Errorf("%w: remote write/atomic access requires local write", verbs.ErrInvalid)
	}
	d := pd.dev
	if uint64(len(buf)) > d.attr.MaxMRSize {
		return nil, fmt.Errorf("%w: MR of %d bytes exceeds max_mr_size %d", verbs.ErrInvalid, len(buf), d.attr.MaxMRSize)
	}
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	if d.maxMRPages > 0 {
		pages := (addr%pageSize + uint64(len(buf)) + pageSize - 1) / pageSize
		if pages > uint64(d.maxMRPages) {
			return nil, fmt.Errorf("%w: MR spans %d pages, device limit %d", verbs.ErrInvalid, pages, d.maxMRPages)
		}
	}
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil, fmt.Errorf("%w: protection domain", verbs.ErrClosed)
	}
	if err := d.reserve(&d.nMR, d.attr.MaxMR, "MR"); err != nil {
		return nil, err
	}
	mr := &memoryRegion{pd: pd, buf: buf, addr: addr, access: access}
	mr.cond.L = &mr.mu
	d.addMR(mr)
	pd.users++
	return mr, nil
}

// use counts a QP as a user of the PD.
func (pd *protectionDomain) use() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return fmt.Errorf("%w: protection domain", verbs.ErrClosed)
	}
	pd.users++
	return nil
}

func (pd *protectionDomain) unuse() {
	pd.mu.Lock()
	pd.users--
	pd.mu.Unlock()
}

// Close deallocates the PD; ErrInvalid while MRs or QPs use it.
func (pd *protectionDomain) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return fmt.Errorf("%w: protection domain", verbs.ErrClosed)
	}
	if pd.users > 0 {
		return fmt.Errorf("%w: protection domain in use by %d MRs/QPs", verbs.ErrInvalid, pd.users)
	}
	pd.closed = true
	pd.dev.release(&pd.dev.nPD)
	return nil
}
