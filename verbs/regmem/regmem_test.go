package regmem

import (
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

func TestAllocRegister(t *testing.T) {
	r, err := Alloc(3<<20 + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	mem := r.Bytes()
	if len(mem) < 3<<20+1 {
		t.Fatalf("%d bytes", len(mem))
	}
	t.Logf("huge pages: %v", r.Huge())
	mem[len(mem)-1] = 1 // mapped and writable

	p := soft.New(soft.Options{})
	defer p.Close()
	devs, err := p.Devices()
	if err != nil || len(devs) == 0 {
		t.Fatal(err)
	}
	pd, err := devs[0].AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	const chunk = 1 << 20
	g, err := Register(pd, mem, chunk, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if want := (len(mem) + chunk - 1) / chunk; g.Regions() != want {
		t.Fatalf("%d regions, want %d", g.Regions(), want)
	}
	for _, off := range []int{0, chunk - 1, chunk, 3*chunk + 5} {
		if off >= len(mem) {
			continue
		}
		s := g.SGE(off, 1)
		if s.Addr != g.Addr(off) || s.LKey != g.LKey(off) {
			t.Fatalf("SGE(%d) = %+v", off, s)
		}
		if s.Addr != uint64(uintptrOf(mem, off)) {
			t.Fatalf("Addr(%d) = %#x, want the byte's address", off, s.Addr)
		}
	}
	if g.LKey(0) == g.LKey(chunk) {
		t.Fatal("chunks share a key")
	}
	// Span: inside one memory region, its address and keys; across a
	// boundary, refused.
	for _, c := range []struct {
		off, n int
		ok     bool
	}{{0, chunk, true}, {chunk - 1, 1, true}, {chunk - 1, 2, false}, {chunk, 4096, true}, {2*chunk + 1, chunk, false}, {2*chunk + 1, chunk - 1, true}} {
		addr, lkey, rkey, ok := g.Span(c.off, c.n)
		if ok != c.ok {
			t.Fatalf("Span(%d, %d) ok = %v, want %v", c.off, c.n, ok, c.ok)
		}
		if ok && (addr != uint64(uintptrOf(mem, c.off)) || lkey != g.LKey(c.off) || rkey != g.RKey(c.off) || lkey != g.mrs[c.off/chunk].LKey()) {
			t.Fatalf("Span(%d, %d) = %#x %#x %#x", c.off, c.n, addr, lkey, rkey)
		}
	}
	// a short last region (memory not a multiple of chunk)
	short, err := Register(pd, mem[:2*chunk+100], chunk, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if short.Regions() != 3 {
		t.Fatalf("%d regions, want 3", short.Regions())
	}
	for _, c := range []struct {
		off, n int
		ok     bool
	}{{2 * chunk, 100, true}, {2*chunk + 50, 50, true}, {2*chunk - 10, 20, false}, {2*chunk - 10, 10, true}} {
		addr, lkey, _, ok := short.Span(c.off, c.n)
		if ok != c.ok || ok && (addr != uint64(uintptrOf(mem, c.off)) || lkey != short.mrs[c.off/chunk].LKey()) {
			t.Fatalf("short: Span(%d, %d) = %#x %#x %v, want ok %v", c.off, c.n, addr, lkey, ok, c.ok)
		}
	}
	one, err := Register(pd, mem[:4096], 0, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if addr, lkey, rkey, ok := one.Span(100, 3996); !ok || addr != uint64(uintptrOf(mem, 100)) || lkey != one.mrs[0].LKey() || rkey != one.mrs[0].RKey() {
		t.Fatalf("one region: Span = %#x %#x %#x %v", addr, lkey, rkey, ok)
	}
	if _, err := Register(pd, mem, MaxChunk+1, 0); err == nil {
		t.Fatal("chunk above MaxChunk accepted")
	}
}
