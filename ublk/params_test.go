package ublk

import (
	"strings"
	"testing"
)

// TestParamsFor checks the geometry → SET_PARAMS mapping and what the
// driver would refuse (6.12's ublk_validate_params).
func TestParamsFor(t *testing.T) {
	g := Geometry{LogicalBlockSize: 512, PhysicalBlockSize: 4096, Blocks: 1 << 20, Queues: 2, Depth: 64,
		MaxTransfer: 128 << 10, MaxDiscardBlocks: 1 << 20, MaxWriteZeroesBlocks: 1 << 16, VolatileCache: true, FUA: true}
	p, lim, err := paramsFor(&g, g.MaxTransfer, 4096)
	if err != nil {
		t.Fatal(err)
	}
	want := Params{Types: paramTypeBasic | paramTypeDiscard, Attrs: attrVolatileCache | attrFUA,
		LogicalBSShift: 9, PhysicalBSShift: 12, IOOptShift: 12, IOMinShift: 12, MaxSectors: 256, DevSectors: 1 << 20,
		DiscardGranularity: 4096, MaxDiscardSectors: 1 << 20, MaxWriteZeroesSectors: 1 << 16, MaxDiscardSegments: 1}
	if p != want {
		t.Fatalf("params\n got %+v\nwant %+v", p, want)
	}
	if lim != (limits{devSectors: 1 << 20, lbsMask: 0, maxIOSectors: 256, maxDiscard: 1 << 20, maxWriteZeroes: 1 << 16}) {
		t.Fatalf("limits %+v", lim)
	}

	// 4 KiB blocks: sectors scale, limits clamp to 32 bits of sectors.
	g4 := Geometry{LogicalBlockSize: 4096, Blocks: 1000, MaxTransfer: 1 << 20, MaxDiscardBlocks: ^uint32(0), ReadOnly: true}
	p, lim, err = paramsFor(&g4, g4.MaxTransfer, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if p.DevSectors != 8000 || p.LogicalBSShift != 12 || p.MaxDiscardSectors != ^uint32(0)&^7 || p.MaxWriteZeroesSectors != 0 ||
		p.Attrs != attrReadOnly || lim.lbsMask != 7 || !lim.readOnly || lim.maxWriteZeroes != 0 {
		t.Fatalf("4k: %+v %+v", p, lim)
	}
	// No discard, no write zeroes: no discard parameters at all.
	g0 := Geometry{LogicalBlockSize: 512, Blocks: 8, MaxTransfer: 4096}
	if p, _, _ := paramsFor(&g0, 4096, 4096); p.Types != paramTypeBasic || p.Attrs != 0 {
		t.Fatalf("plain: %+v", p)
	}

	for _, c := range []struct {
		g    Geometry
		want string
	}{
		{Geometry{LogicalBlockSize: 8192, Blocks: 1, MaxTransfer: 4096}, "logical block size"},
		{Geometry{LogicalBlockSize: 768, Blocks: 1, MaxTransfer: 4096}, "logical block size"},
		{Geometry{LogicalBlockSize: 4096, PhysicalBlockSize: 512, Blocks: 1, MaxTransfer: 4096}, "physical block size"},
		{Geometry{LogicalBlockSize: 512, Blocks: 0, MaxTransfer: 4096}, "0 blocks"},
		{Geometry{LogicalBlockSize: 4096, Blocks: 1 << 62, MaxTransfer: 4096}, "too large"},
	} {
		if _, _, err := paramsFor(&c.g, 4096, 4096); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.g, err, c.want)
		}
	}
}
