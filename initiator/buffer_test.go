package initiator

import (
	"errors"
	"testing"
)

func TestBufferPoolChunksMemoryRegions(t *testing.T) {
	mem := &fakeMem{}
	// MR limit of 3 buffers: 10 buffers need 4 regions (3+3+3+1).
	p, err := newBufferPool(mem, 10, 4096, 3*4096+100)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	if p.reg.Regions() != 4 || len(mem.regions) != 4 {
		t.Fatalf("%d memory regions (%d registered), want 4", p.reg.Regions(), len(mem.regions))
	}
	seen := map[uint64]bool{}
	for i := range p.bufs {
		b := &p.bufs[i]
		if len(b.Bytes()) != 4096 || cap(b.Bytes()) != 4096 {
			t.Fatalf("buffer %d: len %d cap %d", i, len(b.Bytes()), cap(b.Bytes()))
		}
		mr := mem.regions[i/3]
		if b.addr < mr.Addr() || b.addr+4096 > mr.Addr()+uint64(len(mr.Buf())) || b.rkey != mr.RKey() || b.lkey != mr.LKey() {
			t.Fatalf("buffer %d not inside its region", i)
		}
		if mr.Access() != poolAccess {
			t.Fatalf("region access %v", mr.Access())
		}
		if seen[b.addr] {
			t.Fatalf("buffer %d overlaps", i)
		}
		seen[b.addr] = true
		// The buffer is the registered memory itself.
		got, ok := mem.lookup(b.addr, 4096, b.rkey, true, poolAccess)
		if !ok || &got[0] != &b.Bytes()[0] {
			t.Fatalf("buffer %d: address does not name its bytes", i)
		}
	}
}

func TestBufferPoolAllocRelease(t *testing.T) {
	mem := &fakeMem{}
	p, err := newBufferPool(mem, 3, 512, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var got []*Buffer
	for {
		b, ok := p.alloc()
		if !ok {
			break
		}
		got = append(got, b)
	}
	if len(got) != 3 {
		t.Fatalf("allocated %d", len(got))
	}
	if !p.release(got[1]) || p.release(got[1]) {
		t.Fatal("release / double release")
	}
	other, _ := newBufferPool(mem, 1, 512, 0)
	defer other.close()
	ob, _ := other.alloc()
	if p.release(ob) || p.release(nil) {
		t.Fatal("released a foreign or nil buffer")
	}
	if b, ok := p.alloc(); !ok || b != got[1] {
		t.Fatal("released buffer not reusable")
	}
}

func TestBufferPoolRejectsBadSizes(t *testing.T) {
	mem := &fakeMem{}
	for _, tc := range []struct {
		n, size int
		maxMR   uint64
	}{{0, 4096, 0}, {1, 0, 0}, {1, 8192, 4096}} {
		if _, err := newBufferPool(mem, tc.n, tc.size, tc.maxMR); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}
