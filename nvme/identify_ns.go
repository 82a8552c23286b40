package nvme

import "encoding/binary"

// Identify Namespace data structure for the NVM command set (CNS 00h; NVM
// Command Set spec 1.0 §4.1.5.1, Figure 97 "Identify Namespace Data
// Structure, NVM Command Set").

// NSFEAT bits (byte 24).
const (
	NSFEATThinProvisioning = 1 << 0
	NSFEATAtomicFields     = 1 << 1 // NAWUN/NAWUPF/NACWU are valid
	NSFEATDeallocErrors    = 1 << 2
	NSFEATOptPerf          = 1 << 4 // NPWG/NPWA/NPDG/NPDA/NOWS are valid
)

// NMIC bits (byte 30).
const NMICShared = 1 << 0 // namespace may be attached to several controllers

// DLFEAT bits (byte 33): deallocate logical block features.
const (
	DLFEATReadZeroes      = 0x1    // bits 2:0 = 001b: deallocated blocks read as zeroes
	DLFEATWriteZeroesDeac = 1 << 3 // Write Zeroes supports DEAC
)

// FLBAS bits (byte 26).
const (
	FLBASIndexMask    = 0x0F   // bits 3:0: LBA format index (low bits)
	FLBASExtendedMeta = 1 << 4 // metadata transferred at the end of the LBA
)

// Identify Namespace offsets.
const (
	idnNSZE     = 0
	idnNCAP     = 8
	idnNUSE     = 16
	idnNSFEAT   = 24
	idnNLBAF    = 25
	idnFLBAS    = 26
	idnMC       = 27
	idnDPC      = 28
	idnDPS      = 29
	idnNMIC     = 30
	idnRESCAP   = 31
	idnFPI      = 32
	idnDLFEAT   = 33
	idnNAWUN    = 34
	idnNAWUPF   = 36
	idnNACWU    = 38
	idnNOIOB    = 46
	idnNVMCAP   = 48 // 16 bytes
	idnNPWG     = 64
	idnNPWA     = 66
	idnNPDG     = 68
	idnNPDA     = 70
	idnNOWS     = 72
	idnANAGRPID = 92
	idnNSATTR   = 99
	idnNVMSETID = 100
	idnENDGID   = 102
	idnNGUID    = 104
	idnEUI64    = 120
	idnLBAF     = 128 // 4 bytes each
)

// LBAFormat is one LBA format descriptor (Figure 98): MS (metadata size)
// bits 15:0, LBADS (log2 of the data size) bits 23:16, RP (relative
// performance) bits 25:24.
type LBAFormat struct {
	MS    uint16
	LBADS uint8
	RP    uint8
}

// IdentifyNamespace is the decoded Identify Namespace data structure. Only
// the first 16 LBA formats are represented; NLBAF is 0's based. NVMCAP is
// a 128-bit field: the low 64 bits are kept, and a value that does not fit
// decodes as the maximum uint64.
type IdentifyNamespace struct {
	NSZE, NCAP, NUSE uint64 // size, capacity, utilization in logical blocks
	NSFEAT           uint8
	NLBAF            uint8 // number of LBA formats, 0's based
	FLBAS            uint8
	MC, DPC, DPS     uint8
	NMIC             uint8
	RESCAP           uint8
	FPI              uint8
	DLFEAT           uint8
	NAWUN            uint16
	NAWUPF           uint16
	NACWU            uint16
	NOIOB            uint16
	NVMCAP           uint64
	NPWG, NPWA       uint16
	NPDG, NPDA       uint16
	NOWS             uint16
	ANAGRPID         uint32
	NSATTR           uint8
	NVMSETID         uint16
	ENDGID           uint16
	NGUID            [16]byte
	EUI64            [8]byte
	LBAF             [16]LBAFormat
}

// Marshal encodes n into b[:IdentifySize], zeroing every byte it does not
// set. It returns ErrShort (b unchanged) when b is too short.
func (n *IdentifyNamespace) Marshal(b []byte) error {
	if len(b) < IdentifySize {
		return ErrShort
	}
	b = b[:IdentifySize]
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[idnNSZE:], n.NSZE)
	le.PutUint64(b[idnNCAP:], n.NCAP)
	le.PutUint64(b[idnNUSE:], n.NUSE)
	b[idnNSFEAT] = n.NSFEAT
	b[idnNLBAF] = n.NLBAF
	b[idnFLBAS] = n.FLBAS
	b[idnMC] = n.MC
	b[idnDPC] = n.DPC
	b[idnDPS] = n.DPS
	b[idnNMIC] = n.NMIC
	b[idnRESCAP] = n.RESCAP
	b[idnFPI] = n.FPI
	b[idnDLFEAT] = n.DLFEAT
	le.PutUint16(b[idnNAWUN:], n.NAWUN)
	le.PutUint16(b[idnNAWUPF:], n.NAWUPF)
	le.PutUint16(b[idnNACWU:], n.NACWU)
	le.PutUint16(b[idnNOIOB:], n.NOIOB)
	putUint128(b[idnNVMCAP:], n.NVMCAP)
	le.PutUint16(b[idnNPWG:], n.NPWG)
	le.PutUint16(b[idnNPWA:], n.NPWA)
	le.PutUint16(b[idnNPDG:], n.NPDG)
	le.PutUint16(b[idnNPDA:], n.NPDA)
	le.PutUint16(b[idnNOWS:], n.NOWS)
	le.PutUint32(b[idnANAGRPID:], n.ANAGRPID)
	b[idnNSATTR] = n.NSATTR
	le.PutUint16(b[idnNVMSETID:], n.NVMSETID)
	le.PutUint16(b[idnENDGID:], n.ENDGID)
	copy(b[idnNGUID:], n.NGUID[:])
	copy(b[idnEUI64:], n.EUI64[:])
	for i, f := range n.LBAF {
		o := idnLBAF + 4*i
		le.PutUint16(b[o:], f.MS)
		b[o+2] = f.LBADS
		b[o+3] = f.RP & 3
	}
	return nil
}

// ParseIdentifyNamespace decodes an Identify Namespace data structure. It
// returns ErrShort when len(b) < IdentifySize. It does not retain b.
func ParseIdentifyNamespace(b []byte) (IdentifyNamespace, error) {
	var n IdentifyNamespace
	if len(b) < IdentifySize {
		return n, ErrShort
	}
	le := binary.LittleEndian
	n.NSZE = le.Uint64(b[idnNSZE:])
	n.NCAP = le.Uint64(b[idnNCAP:])
	n.NUSE = le.Uint64(b[idnNUSE:])
	n.NSFEAT = b[idnNSFEAT]
	n.NLBAF = b[idnNLBAF]
	n.FLBAS = b[idnFLBAS]
	n.MC = b[idnMC]
	n.DPC = b[idnDPC]
	n.DPS = b[idnDPS]
	n.NMIC = b[idnNMIC]
	n.RESCAP = b[idnRESCAP]
	n.FPI = b[idnFPI]
	n.DLFEAT = b[idnDLFEAT]
	n.NAWUN = le.Uint16(b[idnNAWUN:])
	n.NAWUPF = le.Uint16(b[idnNAWUPF:])
	n.NACWU = le.Uint16(b[idnNACWU:])
	n.NOIOB = le.Uint16(b[idnNOIOB:])
	n.NVMCAP = uint128(b[idnNVMCAP:])
	n.NPWG = le.Uint16(b[idnNPWG:])
	n.NPWA = le.Uint16(b[idnNPWA:])
	n.NPDG = le.Uint16(b[idnNPDG:])
	n.NPDA = le.Uint16(b[idnNPDA:])
	n.NOWS = le.Uint16(b[idnNOWS:])
	n.ANAGRPID = le.Uint32(b[idnANAGRPID:])
	n.NSATTR = b[idnNSATTR]
	n.NVMSETID = le.Uint16(b[idnNVMSETID:])
	n.ENDGID = le.Uint16(b[idnENDGID:])
	copy(n.NGUID[:], b[idnNGUID:])
	copy(n.EUI64[:], b[idnEUI64:])
	for i := range n.LBAF {
		o := idnLBAF + 4*i
		n.LBAF[i] = LBAFormat{MS: le.Uint16(b[o:]), LBADS: b[o+2], RP: b[o+3] & 3}
	}
	return n, nil
}

// LBAFIndex is the index of the formatted LBA format: FLBAS bits 3:0, with
// bits 6:5 as the high bits when more than 16 formats exist (NLBAF > 15).
func (n *IdentifyNamespace) LBAFIndex() int {
	i := int(n.FLBAS & FLBASIndexMask)
	if n.NLBAF > 15 {
		i |= int(n.FLBAS>>5&3) << 4
	}
	return i
}

// BlockSize is the logical block data size in bytes of the formatted LBA
// format, or 0 when it is unusable: an index beyond NLBAF or beyond the 16
// formats kept here, or LBADS outside 9…30 (the spec forbids < 9, i.e.
// 512 bytes).
func (n *IdentifyNamespace) BlockSize() int {
	i := n.LBAFIndex()
	if i > int(n.NLBAF) || i >= len(n.LBAF) {
		return 0
	}
	ds := n.LBAF[i].LBADS
	if ds < 9 || ds > 30 {
		return 0
	}
	return 1 << ds
}

// putUint128 writes v as a 128-bit little-endian counter (high half zero).
func putUint128(b []byte, v uint64) {
	binary.LittleEndian.PutUint64(b, v)
	clear(b[8:16])
}

// uint128 reads a 128-bit little-endian counter, saturating at MaxUint64.
func uint128(b []byte) uint64 {
	if binary.LittleEndian.Uint64(b[8:]) != 0 {
		return ^uint64(0)
	}
	return binary.LittleEndian.Uint64(b)
}
