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
// Callers lay their buffers out so that none crosses a multiple of Chunk.
type Registration struct {
	mrs   []verbs.MemoryRegion
	chunk int
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
	}
	return g, nil
}

// Chunk is the size of every memory region but the last.
func (g *Registration) Chunk() int { return g.chunk }

// Regions is the number of memory regions.
func (g *Registration) Regions() int { return len(g.mrs) }

// LKey is the local key of the memory region holding byte off.
func (g *Registration) LKey(off int) uint32 { return g.mrs[off/g.chunk].LKey() }

// RKey is the remote key of the memory region holding byte off (for a
// keyed SGL that lets the peer RDMA READ or WRITE it).
func (g *Registration) RKey(off int) uint32 { return g.mrs[off/g.chunk].RKey() }

// Addr is the address work requests use for byte off.
func (g *Registration) Addr(off int) uint64 {
	i := off / g.chunk
	return g.mrs[i].Addr() + uint64(off-i*g.chunk)
}

// SGE describes n bytes at off; the caller guarantees they lie in one
// chunk.
func (g *Registration) SGE(off int, n uint32) verbs.SGE {
	i := off / g.chunk
	return verbs.SGE{Addr: g.mrs[i].Addr() + uint64(off-i*g.chunk), Length: n, LKey: g.mrs[i].LKey()}
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
