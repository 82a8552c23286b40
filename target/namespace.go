package target

import (
	"crypto/sha256"
	"fmt"
	"math/bits"
	"slices"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// MaxNSID is the largest namespace ID a subsystem accepts; Identify
// Controller NN reports it. (Linux nvmet uses the same limit.)
const MaxNSID = 1024

// NamespaceConfig describes a namespace to attach to a subsystem.
type NamespaceConfig struct {
	// NSID is 1..MaxNSID, unique in the subsystem.
	NSID uint32
	// Backend serves the blocks. The caller keeps owning it: the core
	// never closes it (see Subsystem.RemoveNamespace).
	//
	// A wrapper that adds nothing to the data path (a handle that meters,
	// or resizes in place) implements Unwrapper: the core then runs every
	// command on the backend it unwraps to (repeatedly, until a backend
	// does not unwrap or returns nil), so the inner backend's optional
	// capabilities (blockdev.NonBlocking, Async, FixedBuffers, Resizer)
	// are used, never hidden. Such a wrapper sees no I/O calls; to observe
	// I/O it implements IOMeter (or sets Meter). Wrappers' tests run
	// targettest.CheckUnwrapper, the contract check.
	Backend blockdev.Backend
	// Meter, when set, is told about every Read, Write, Flush, Write
	// Zeroes and Deallocate of the namespace (meter.go). nil: the Backend
	// itself when it implements IOMeter, else no metering.
	Meter IOMeter
	// UUID, NGUID and EUI64 are the namespace identifiers reported by
	// Identify (CNS 00h, 03h); zero values are not reported. If all three
	// are zero, AddNamespace derives an NGUID from SHA-256 of the
	// subsystem NQN and the NSID, so a host sees a stable unique ID.
	UUID  [16]byte
	NGUID [16]byte
	EUI64 [8]byte
	// ReadOnly rejects writes, write zeroes and deallocation with
	// Namespace Is Write Protected.
	ReadOnly bool
	// ANAGroup is the namespace's ANA group, 1..MaxANAGroup; 0 means
	// DefaultANAGroup. Identify Namespace reports it as ANAGRPID and the
	// group's state per port decides whether I/O through that port is
	// served (see Subsystem.SetANAState).
	ANAGroup uint32
}

// namespace is an attached namespace. Every field except ref, next and
// the counters is immutable after creation; it is shared by the I/O path
// of every queue.
type namespace struct {
	nsid     uint32
	subNQN   string
	backend  blockdev.Backend // Config.Backend unwrapped (Unwrapper)
	meter    IOMeter          // nil: no metering
	shift    uint8            // log2 of the block size
	readOnly bool
	inline   bool // backend is blockdev.NonBlocking: run on the queue goroutine
	// async is the backend's asynchronous path (blockdev.Async) for reads
	// and writes, nil when it has none or runs inline.
	async    blockdev.Async
	fixed    blockdev.FixedBuffers // async's fixed-buffer side, nil without
	uuid     [16]byte
	nguid    [16]byte
	eui64    [8]byte
	anaGroup uint32 // 1..MaxANAGroup

	// ref counts commands using the backend; closed by removal or
	// replacement, whose caller waits for the drain before telling the
	// owner it may close the backend.
	ref gate
	// next is the namespace that took this one's place when its backend
	// was replaced (Subsystem.ReplaceNamespaceBackend), set before ref
	// closes: a command that loaded the table before the swap and finds
	// ref closed runs on next instead (io.go). nil: not replaced.
	next atomic.Pointer[namespace]

	// noSpace counts Capacity Exceeded completions; noSpaceLogged is the
	// UnixNano of the last log line about them (nospace.go).
	noSpace       atomic.Uint64
	noSpaceLogged atomic.Int64
}

// Unwrapper is implemented by a backend wrapper that hands the data path
// to the backend it wraps (see NamespaceConfig.Backend). Unwrap is called
// by AddNamespace (any goroutine) and must return the same backend for
// as long as the namespace is attached, or nil when the wrapper must be
// used as it is.
type Unwrapper interface {
	Unwrap() blockdev.Backend
}

// maxUnwrap bounds the unwrap chain (a cycle is a broken wrapper).
const maxUnwrap = 8

// unwrap follows Unwrapper from b to the backend that serves the I/O.
func unwrap(b blockdev.Backend) blockdev.Backend {
	for range maxUnwrap {
		u, ok := b.(Unwrapper)
		if !ok {
			return b
		}
		in := u.Unwrap()
		if in == nil {
			return b
		}
		b = in
	}
	return b
}

// newNamespace validates c and builds a namespace of subsystem subNQN.
func newNamespace(subNQN string, c NamespaceConfig) (*namespace, error) {
	if c.NSID == 0 || c.NSID > MaxNSID {
		return nil, fmt.Errorf("%w: %d (want 1..%d)", ErrBadNSID, c.NSID, MaxNSID)
	}
	if c.Backend == nil {
		return nil, fmt.Errorf("%w: nil backend for nsid %d", ErrBadBackend, c.NSID)
	}
	meter := c.Meter
	if meter == nil {
		meter, _ = c.Backend.(IOMeter)
	}
	c.Backend = unwrap(c.Backend)
	bs := c.Backend.BlockSize()
	if !blockdev.ValidBlockSize(bs) {
		return nil, fmt.Errorf("%w: block size %d", ErrBadBackend, bs)
	}
	if c.Backend.Blocks() == 0 {
		return nil, fmt.Errorf("%w: no blocks", ErrBadBackend)
	}
	group, err := anaGroupOf(c.ANAGroup)
	if err != nil {
		return nil, err
	}
	n := &namespace{
		nsid:     c.NSID,
		subNQN:   subNQN,
		backend:  c.Backend,
		meter:    meter,
		shift:    uint8(bits.TrailingZeros(uint(bs))),
		readOnly: c.ReadOnly,
		uuid:     c.UUID,
		nguid:    c.NGUID,
		eui64:    c.EUI64,
		anaGroup: group,
	}
	if nb, ok := c.Backend.(blockdev.NonBlocking); ok && nb.NonBlocking() {
		n.inline = true
	} else if a, ok := c.Backend.(blockdev.Async); ok {
		n.async = a
		n.fixed, _ = a.(blockdev.FixedBuffers)
	}
	if n.uuid == [16]byte{} && n.nguid == [16]byte{} && n.eui64 == [8]byte{} {
		h := sha256.Sum256(fmt.Appendf(nil, "rdmablk-nguid\x00%s\x00%d", subNQN, c.NSID))
		copy(n.nguid[:], h[:16])
	}
	n.ref.init()
	return n, nil
}

// blockSize is the logical block size in bytes.
func (n *namespace) blockSize() int { return 1 << n.shift }

// nsTable is an immutable snapshot of a subsystem's namespaces. Writers
// build a new table and publish it through Subsystem.ns; readers on the
// I/O path load the pointer and never lock.
type nsTable struct {
	byID      []*namespace // index nsid-1; len = highest NSID
	ids       []uint32     // attached NSIDs, ascending
	allInline bool         // every backend may run inline (or none attached)
}

var emptyTable = &nsTable{allInline: true}

// get returns namespace nsid or nil (also for 0 and out-of-range NSIDs).
func (t *nsTable) get(nsid uint32) *namespace {
	if nsid == 0 || uint64(nsid) > uint64(len(t.byID)) {
		return nil
	}
	return t.byID[nsid-1]
}

// with returns a copy of t with n added (n.nsid must be free).
func (t *nsTable) with(n *namespace) *nsTable {
	size := max(len(t.byID), int(n.nsid))
	nt := &nsTable{byID: make([]*namespace, size)}
	copy(nt.byID, t.byID)
	nt.byID[n.nsid-1] = n
	nt.finish()
	return nt
}

// without returns a copy of t without namespace nsid.
func (t *nsTable) without(nsid uint32) *nsTable {
	nt := &nsTable{byID: slices.Clone(t.byID)}
	nt.byID[nsid-1] = nil
	for len(nt.byID) > 0 && nt.byID[len(nt.byID)-1] == nil {
		nt.byID = nt.byID[:len(nt.byID)-1]
	}
	nt.finish()
	return nt
}

// finish computes ids and allInline from byID.
func (t *nsTable) finish() {
	t.allInline = true
	for _, n := range t.byID {
		if n == nil {
			continue
		}
		t.ids = append(t.ids, n.nsid)
		if !n.inline {
			t.allInline = false
		}
	}
}
