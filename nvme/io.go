package nvme

import "encoding/binary"

// NVM I/O command fields (NVM command set spec: Read, Write, Write Zeroes,
// Dataset Management).

// CDW12 bits of Read / Write / Write Zeroes.
const (
	RWNLBMask      = 0xFFFF  // number of logical blocks, 0's based
	RWDeallocate   = 1 << 25 // Write Zeroes: DEAC
	RWFUA          = 1 << 30
	RWLimitedRetry = 1 << 31
)

// RWCmd is a view of a Read, Write or Write Zeroes command.
type RWCmd struct{ *SQE }

// SLBA is the starting LBA (CDW10-11).
func (c RWCmd) SLBA() uint64 { return binary.LittleEndian.Uint64(c.SQE[40:]) }

// NLB is the number of logical blocks (1-based; the field is 0's based).
func (c RWCmd) NLB() uint32 { return c.SQE.CDW12()&RWNLBMask + 1 }

// FUA reports force unit access.
func (c RWCmd) FUA() bool { return c.SQE.CDW12()&RWFUA != 0 }

// Deallocate reports the Write Zeroes DEAC bit.
func (c RWCmd) Deallocate() bool { return c.SQE.CDW12()&RWDeallocate != 0 }

// SetRW fills a Read / Write / Write Zeroes command. nlb is 1-based
// (1…65536); flags are extra CDW12 bits (RWFUA, RWDeallocate).
func (s *SQE) SetRW(op uint8, nsid uint32, slba uint64, nlb uint32, flags uint32) {
	s.SetOpcode(op)
	s.SetNSID(nsid)
	binary.LittleEndian.PutUint64(s[40:], slba)
	s.SetCDW(12, (nlb-1)&RWNLBMask|flags)
}

// Dataset Management (CDW10 NR 0's based, CDW11 attributes).
const (
	DSMAttrIDR        = 1 << 0
	DSMAttrIDW        = 1 << 1
	DSMAttrDeallocate = 1 << 2
	DSMRangeSize      = 16
	DSMMaxRanges      = 256
)

// DSMRange is one Dataset Management range.
type DSMRange struct {
	ContextAttributes uint32
	NLB               uint32 // length in logical blocks (1-based)
	SLBA              uint64
}

// ParseDSMRange decodes range i of a DSM data buffer.
func ParseDSMRange(b []byte, i int) (DSMRange, bool) {
	var r DSMRange
	off := i * DSMRangeSize
	if i < 0 || off+DSMRangeSize > len(b) {
		return r, false
	}
	r.ContextAttributes = binary.LittleEndian.Uint32(b[off:])
	r.NLB = binary.LittleEndian.Uint32(b[off+4:])
	r.SLBA = binary.LittleEndian.Uint64(b[off+8:])
	return r, true
}

// PutDSMRange encodes r as range i of b.
func PutDSMRange(b []byte, i int, r DSMRange) bool {
	off := i * DSMRangeSize
	if i < 0 || off+DSMRangeSize > len(b) {
		return false
	}
	binary.LittleEndian.PutUint32(b[off:], r.ContextAttributes)
	binary.LittleEndian.PutUint32(b[off+4:], r.NLB)
	binary.LittleEndian.PutUint64(b[off+8:], r.SLBA)
	return true
}
