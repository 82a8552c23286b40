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
	if _, err := Register(pd, mem, MaxChunk+1, 0); err == nil {
		t.Fatal("chunk above MaxChunk accepted")
	}
}
