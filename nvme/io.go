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

// SetRW fills a Read / Write / Write Zeroes command, zeroing all bytes
// except flags, CID and SGL1. nlb is 1-based (1…65536); the caller must
// check the range (0 would encode 65536 blocks). flags are extra CDW12 bits
// (RWFUA, RWDeallocate). It allocates nothing.
func (s *SQE) SetRW(op uint8, nsid uint32, slba uint64, nlb uint32, flags uint32) {
	s.begin(op)
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

// dsmRangeOff returns the offset of range i in b, or false when range i
// does not fit (checked by division, so a huge i cannot overflow).
func dsmRangeOff(b []byte, i int) (int, bool) {
	if i < 0 || i >= len(b)/DSMRangeSize {
		return 0, false
	}
	return i * DSMRangeSize, true
}

// ParseDSMRange decodes range i of a DSM data buffer (NVM command set spec,
// Dataset Management "Range Definition": context attributes at +0, NLB at
// +4, SLBA at +8). It returns false when range i is not wholly inside b.
func ParseDSMRange(b []byte, i int) (DSMRange, bool) {
	var r DSMRange
	off, ok := dsmRangeOff(b, i)
	if !ok {
		return r, false
	}
	r.ContextAttributes = binary.LittleEndian.Uint32(b[off:])
	r.NLB = binary.LittleEndian.Uint32(b[off+4:])
	r.SLBA = binary.LittleEndian.Uint64(b[off+8:])
	return r, true
}

// PutDSMRange encodes r as range i of b. It returns false (writing
// nothing) when range i is not wholly inside b.
func PutDSMRange(b []byte, i int, r DSMRange) bool {
	off, ok := dsmRangeOff(b, i)
	if !ok {
		return false
	}
	binary.LittleEndian.PutUint32(b[off:], r.ContextAttributes)
	binary.LittleEndian.PutUint32(b[off+4:], r.NLB)
	binary.LittleEndian.PutUint64(b[off+8:], r.SLBA)
	return true
}

// SetFlush fills a Flush command for nsid (NVM command set spec §3.3.1;
// NSID FFFFFFFFh flushes all namespaces when VWC allows it), zeroing all
// bytes except flags, CID and SGL1.
func (s *SQE) SetFlush(nsid uint32) {
	s.begin(IOFlush)
	s.SetNSID(nsid)
}

// SetDSM fills a Dataset Management command (NVM command set spec §3.2.3):
// nr is the 1-based number of ranges (1…DSMMaxRanges; CDW10 NR bits 7:0 are
// 0's based, so the caller must check the range), attr the CDW11 attribute
// bits (DSMAttrDeallocate...). The ranges are the data, nr*DSMRangeSize
// bytes. All bytes except flags, CID and SGL1 are zeroed first.
func (s *SQE) SetDSM(nsid uint32, nr int, attr uint32) {
	s.begin(IODatasetMgmt)
	s.SetNSID(nsid)
	s.SetCDW(10, uint32(nr-1)&0xFF)
	s.SetCDW(11, attr)
}

// DSMCmd is a view of a Dataset Management command.
type DSMCmd struct{ *SQE }

// NR is the 1-based number of ranges (1…256).
func (c DSMCmd) NR() int { return int(c.SQE.CDW10()&0xFF) + 1 }

// Attributes is CDW11 (DSMAttr* bits).
func (c DSMCmd) Attributes() uint32 { return c.SQE.CDW11() }
