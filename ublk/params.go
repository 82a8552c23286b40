package ublk

import (
	"errors"
	"fmt"
	"math/bits"
)

// paramsFor turns a backend's geometry into the device's parameters,
// checking what the kernel would refuse (6.12's ublk_validate_params).
func paramsFor(g *Geometry, maxIO uint32, pageSize int) (Params, limits, error) {
	lbs, pbs := g.LogicalBlockSize, g.PhysicalBlockSize
	if pbs == 0 {
		pbs = lbs
	}
	switch {
	case lbs < 512 || lbs > uint32(pageSize) || lbs&(lbs-1) != 0:
		return Params{}, limits{}, fmt.Errorf("ublk: logical block size %d: want a power of two in 512..%d", lbs, pageSize)
	case pbs < lbs || pbs&(pbs-1) != 0:
		return Params{}, limits{}, fmt.Errorf("ublk: physical block size %d with logical %d", pbs, lbs)
	case g.Blocks == 0:
		return Params{}, limits{}, errors.New("ublk: device of 0 blocks")
	}
	spb := uint64(lbs / 512)
	if hi, sectors := bits.Mul64(g.Blocks, spb); hi != 0 || sectors >= 1<<55 {
		return Params{}, limits{}, fmt.Errorf("ublk: %d blocks of %d bytes is too large", g.Blocks, lbs)
	}
	p := Params{
		Types:           paramTypeBasic,
		LogicalBSShift:  uint8(bits.TrailingZeros32(lbs)),
		PhysicalBSShift: uint8(bits.TrailingZeros32(pbs)),
		IOMinShift:      uint8(bits.TrailingZeros32(pbs)),
		IOOptShift:      uint8(bits.TrailingZeros32(pbs)),
		MaxSectors:      maxIO >> 9,
		DevSectors:      g.Blocks * spb,
	}
	if g.VolatileCache {
		p.Attrs |= attrVolatileCache
		if g.FUA {
			p.Attrs |= attrFUA
		}
	}
	if g.ReadOnly {
		p.Attrs |= attrReadOnly
	}
	if g.Rotational {
		p.Attrs |= attrRotational
	}
	clampSectors := func(blocks uint32) uint32 {
		s := uint64(blocks) * spb
		s = min(s, uint64(^uint32(0))&^(spb-1))
		return uint32(s)
	}
	if g.MaxDiscardBlocks > 0 || g.MaxWriteZeroesBlocks > 0 {
		p.Types |= paramTypeDiscard
		p.DiscardGranularity = pbs
		p.MaxDiscardSectors = clampSectors(g.MaxDiscardBlocks)
		p.MaxWriteZeroesSectors = clampSectors(g.MaxWriteZeroesBlocks)
		if p.MaxDiscardSectors > 0 {
			p.MaxDiscardSegments = 1
		}
	}
	lim, err := limitsFor(&p, maxIO)
	return p, lim, err
}

// limitsFor derives the per-request checks from parameters (ours, or the
// kernel's on recovery: kernel input, so checked).
func limitsFor(p *Params, maxIO uint32) (limits, error) {
	if p.Types&paramTypeBasic == 0 || p.LogicalBSShift < 9 || p.LogicalBSShift > 16 || p.DevSectors == 0 || p.DevSectors >= 1<<55 {
		return limits{}, fmt.Errorf("ublk: unusable parameters (types %#x, logical block shift %d, %d sectors)", p.Types, p.LogicalBSShift, p.DevSectors)
	}
	lim := limits{
		devSectors:   p.DevSectors,
		lbsMask:      1<<(p.LogicalBSShift-9) - 1,
		maxIOSectors: min(p.MaxSectors, maxIO>>9),
		readOnly:     p.Attrs&attrReadOnly != 0,
	}
	if lim.maxIOSectors == 0 {
		return limits{}, fmt.Errorf("ublk: max_sectors %d with max_io_buf_bytes %d", p.MaxSectors, maxIO)
	}
	if p.Types&paramTypeDiscard != 0 {
		lim.maxDiscard, lim.maxWriteZeroes = p.MaxDiscardSectors, p.MaxWriteZeroesSectors
	}
	return lim, nil
}
