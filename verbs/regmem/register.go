package regmem

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// MaxChunk is the largest memory region Register creates: 1 GiB, the
// PVRDMA limit on one user MR (DESIGN.md §4).
const MaxChunk = 1 << 30

// Registration is memory registered with one protection domain as
// consecutive memory regions of chunk bytes (the last may be shorter).
// Callers lay their buffers out so that none crosses a multiple of the
// chunk size (Span reports one that does).
type Registration struct {
	mrs   []verbs.MemoryRegion
	keys  []regionKeys // per memory region, read once at registration
	chunk int
}

// regionKeys are a memory region's address and keys, which never change:
// the per-I/O lookups below read them here instead of through the
// MemoryRegion interface.
type regionKeys struct {
	addr       uint64
	lkey, rkey uint32
}

// Register registers mem with pd in chunks of chunk bytes (0 → MaxChunk;
// at most MaxChunk). On error nothing stays registered.
func Register(pd verbs.ProtectionDomain, mem []byte, chunk int, access verbs.Access) (*Registration, error) {
	if chunk == 0 {
		chunk = MaxChunk
	}
	if chunk < 0 || chunk > MaxChunk {
		return nil, fmt.Errorf("regmem: chunk %d (1..%d)", chunk, MaxChunk)
	}
	if len(mem) == 0 {
		return nil, errors.New("regmem: empty memory")
	}
	g := &Registration{chunk: chunk}
	for off := 0; off < len(mem); off += chunk {
		end := min(off+chunk, len(mem))
		mr, err := pd.RegisterMemory(mem[off:end:end], access)
		if err != nil {
			_ = g.Close()
			return nil, fmt.Errorf("regmem: register bytes [%d,%d): %w", off, end, err)
		}
		g.mrs = append(g.mrs, mr)
		g.keys = append(g.keys, regionKeys{addr: mr.Addr(), lkey: mr.LKey(), rkey: mr.RKey()})
	}
	return g, nil
}

// Regions is the number of memory regions.
func (g *Registration) Regions() int { return len(g.mrs) }

// region is the index of the memory region holding byte off, and off's
// offset in it (no division when there is one region, the usual case).
func (g *Registration) region(off int) (int, int) {
	if len(g.keys) == 1 {
		return 0, off
	}
	i := off / g.chunk
	return i, off - i*g.chunk
}

// LKey is the local key of the memory region holding byte off.
func (g *Registration) LKey(off int) uint32 { i, _ := g.region(off); return g.keys[i].lkey }

// RKey is the remote key of the memory region holding byte off (for a
// keyed SGL that lets the peer RDMA READ or WRITE it).
func (g *Registration) RKey(off int) uint32 { i, _ := g.region(off); return g.keys[i].rkey }

// Addr is the address work requests use for byte off.
func (g *Registration) Addr(off int) uint64 {
	i, o := g.region(off)
	return g.keys[i].addr + uint64(o)
}

// SGE describes n bytes at off; the caller guarantees they lie in one
// chunk.
func (g *Registration) SGE(off int, n uint32) verbs.SGE {
	i, o := g.region(off)
	return verbs.SGE{Addr: g.keys[i].addr + uint64(o), Length: n, LKey: g.keys[i].lkey}
}

// Span locates the n > 0 bytes at off, which must lie inside the
// registered memory: their address and the keys of their memory region,
// or ok false when they cross from one memory region into the next.
func (g *Registration) Span(off, n int) (addr uint64, lkey, rkey uint32, ok bool) {
	i, o := g.region(off)
	if o+n > g.chunk {
		return 0, 0, 0, false
	}
	k := &g.keys[i]
	return k.addr + uint64(o), k.lkey, k.rkey, true
}

// Close deregisters every memory region; the first error is returned.
func (g *Registration) Close() error {
	var first error
	for _, mr := range g.mrs {
		if err := mr.Close(); err != nil && first == nil && !errors.Is(err, verbs.ErrClosed) {
			first = err
		}
	}
	g.mrs = nil
	return first
}
