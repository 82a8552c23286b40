package soft

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/verbs"
)

// device is the soft RDMA device of a Provider: it owns the key and QP
// number spaces and counts resources against the profile's limits.
type device struct {
	p          *Provider
	name       string
	attr       verbs.DeviceAttr
	maxMRPages int

	mu      sync.Mutex // guards removed, the counts and qpns
	removed bool
	nPD     int
	nCQ     int
	nQP     int
	nMR     int
	qpns    map[uint32]*qp

	// keys is the current key table, replaced whole (copy on write) by
	// addMR and removeMR under mrMu. Posts and remote accesses look keys up
	// in a snapshot without any lock, so the data path of one QP never
	// touches a cache line that every other QP of the device writes.
	mrMu sync.Mutex // serializes key table writers
	keys atomic.Pointer[keyTable]
}

// keyTable maps local and remote keys to their memory regions. Immutable
// once published.
type keyTable struct {
	lkeys map[uint32]*memoryRegion
	rkeys map[uint32]*memoryRegion
}

var _ verbs.Device = (*device)(nil)

func newDevice(p *Provider, name string, attr verbs.DeviceAttr, maxMRPages int) *device {
	d := &device{
		p: p, name: name, attr: attr, maxMRPages: maxMRPages,
		qpns: make(map[uint32]*qp),
	}
	d.keys.Store(&keyTable{lkeys: map[uint32]*memoryRegion{}, rkeys: map[uint32]*memoryRegion{}})
	return d
}

func (d *device) Name() string           { return d.name }
func (d *device) Attr() verbs.DeviceAttr { return d.attr }

// remove marks the device gone (Provider.Close); creating objects fails
// afterwards.
func (d *device) remove() {
	d.mu.Lock()
	d.removed = true
	d.mu.Unlock()
}

// reserve counts one more object of a kind against its limit.
func (d *device) reserve(n *int, max int, what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.removed {
		return fmt.Errorf("%w: device %s", verbs.ErrDeviceRemoved, d.name)
	}
	if *n >= max {
		return fmt.Errorf("%w: %s limit %d reached", verbs.ErrInvalid, what, max)
	}
	*n++
	return nil
}

func (d *device) release(n *int) {
	d.mu.Lock()
	*n--
	d.mu.Unlock()
}

// AllocPD allocates a protection domain.
func (d *device) AllocPD() (verbs.ProtectionDomain, error) {
	if err := d.reserve(&d.nPD, d.attr.MaxPD, "PD"); err != nil {
		return nil, err
	}
	return &protectionDomain{dev: d}, nil
}

// CreateCQ creates a completion queue of exactly cqe entries.
func (d *device) CreateCQ(cqe int, vector int) (verbs.CompletionQueue, error) {
	if cqe < 1 || cqe > d.attr.MaxCQE {
		return nil, fmt.Errorf("%w: CQ of %d entries (device max %d)", verbs.ErrInvalid, cqe, d.attr.MaxCQE)
	}
	if vector < 0 || vector >= d.attr.NumCompVectors {
		return nil, fmt.Errorf("%w: completion vector %d (device has %d)", verbs.ErrInvalid, vector, d.attr.NumCompVectors)
	}
	if err := d.reserve(&d.nCQ, d.attr.MaxCQ, "CQ"); err != nil {
		return nil, err
	}
	return newCQ(d, cqe, vector), nil
}

// newQPN allocates an unpredictable 24-bit QP number (never 0 or 1).
func (d *device) newQPN(q *qp) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		n := rand.Uint32() & 0xffffff
		if n > 1 && d.qpns[n] == nil {
			d.qpns[n] = q
			return n
		}
	}
}

func (d *device) freeQPN(n uint32) {
	d.mu.Lock()
	delete(d.qpns, n)
	d.mu.Unlock()
}

// addMR assigns unpredictable, distinct lkey and rkey to mr and publishes it
// in a new key table.
func (d *device) addMR(mr *memoryRegion) {
	d.mrMu.Lock()
	defer d.mrMu.Unlock()
	old := d.keys.Load()
	for {
		l, r := rand.Uint32(), rand.Uint32()
		if l == 0 || r == 0 || l == r || old.lkeys[l] != nil || old.rkeys[r] != nil ||
			old.lkeys[r] != nil || old.rkeys[l] != nil {
			continue
		}
		mr.lkey, mr.rkey = l, r
		break
	}
	t := &keyTable{lkeys: maps.Clone(old.lkeys), rkeys: maps.Clone(old.rkeys)}
	t.lkeys[mr.lkey] = mr
	t.rkeys[mr.rkey] = mr
	d.keys.Store(t)
}

func (d *device) removeMR(mr *memoryRegion) {
	d.mrMu.Lock()
	defer d.mrMu.Unlock()
	old := d.keys.Load()
	t := &keyTable{lkeys: maps.Clone(old.lkeys), rkeys: maps.Clone(old.rkeys)}
	delete(t.lkeys, mr.lkey)
	delete(t.rkeys, mr.rkey)
	d.keys.Store(t)
}

// remote resolves a remote access [addr, addr+length) through rkey for a QP
// of pd needing right need. On success the MR is acquired (the caller
// releases it after the access) and the bytes are returned.
func (d *device) remote(rkey uint32, addr uint64, length uint32, need verbs.Access, pd *protectionDomain) (*memoryRegion, []byte, bool) {
	mr := d.keys.Load().rkeys[rkey]
	if mr == nil || mr.pd != pd || mr.access&need == 0 || mr.invalidated.Load() {
		return nil, nil, false
	}
	off, ok := mr.span(addr, uint64(length))
	if !ok || !mr.acquire() {
		return nil, nil, false
	}
	return mr, mr.buf[off : off+uint64(length)], true
}

// invalidate revokes remote access through rkey (SEND_WITH_INV). It fails
// when rkey names no MR of pd.
func (d *device) invalidate(rkey uint32, pd *protectionDomain) bool {
	mr := d.keys.Load().rkeys[rkey]
	if mr == nil || mr.pd != pd {
		return false
	}
	mr.invalidated.Store(true)
	return true
}
