package tcppdu

import (
	"encoding/binary"
	"fmt"
)

// DataHeader is the header of an H2CData or C2HData PDU (TCP §3.6.2.7,
// §3.6.2.8), or of an R2T (§3.6.2.10, where DATAO / DATAL are R2TO /
// R2TL): which command, which transfer, which bytes of its data.
type DataHeader struct {
	CCCID uint16 // command capsule CID
	TTAG  uint16 // transfer tag from the R2T (H2CData and R2T only)
	DATAO uint32 // offset of this PDU's data in the command's data
	DATAL uint32 // bytes of data in this PDU
}

// ParseData parses the header of an H2CData, C2HData or R2T PDU whose
// framing Frame has checked (b holds at least its 24 header bytes). It
// checks the PDU's own consistency: DATAL equals the data Frame found
// (R2T: non-zero, as it carries no data), DATAO + DATAL does not pass
// 2^32, and the flags (C2HData SUCCESS only with LAST_PDU; no data
// flags on an R2T). The command's window is the binding's (InWindow).
func ParseData(b []byte, f Frame) (DataHeader, error) {
	if len(b) < DataHLen {
		return DataHeader{}, errf(FESInvalidHeaderField, offPLen, "%s header of %d bytes", TypeName(f.Type), len(b))
	}
	d := DataHeader{CCCID: binary.LittleEndian.Uint16(b[offCCCID:]), TTAG: binary.LittleEndian.Uint16(b[offTTAG:]),
		DATAO: binary.LittleEndian.Uint32(b[offDATAO:]), DATAL: binary.LittleEndian.Uint32(b[offDATAL:])}
	switch f.Type {
	case TypeR2T:
		if d.DATAL == 0 {
			return DataHeader{}, errf(FESInvalidHeaderField, offDATAL, "R2T R2TL 0")
		}
		if f.Flags&(FlagLastPDU|FlagSuccess) != 0 {
			return DataHeader{}, errf(FESInvalidHeaderField, offFlags, "R2T flags %#x", f.Flags)
		}
	case TypeH2CData, TypeC2HData:
		if uint64(d.DATAL) != uint64(f.DataLen) {
			return DataHeader{}, errf(FESInvalidHeaderField, offDATAL, "%s DATAL %d, PDU carries %d", TypeName(f.Type), d.DATAL, f.DataLen)
		}
		if f.Type == TypeH2CData && f.Flags&FlagSuccess != 0 {
			return DataHeader{}, errf(FESInvalidHeaderField, offFlags, "H2CData with SUCCESS")
		}
		if f.Flags&FlagSuccess != 0 && f.Flags&FlagLastPDU == 0 {
			return DataHeader{}, errf(FESInvalidHeaderField, offFlags, "C2HData SUCCESS without LAST_PDU")
		}
	default:
		return DataHeader{}, errf(FESInvalidHeaderField, 0, "%s is not a data PDU", TypeName(f.Type))
	}
	if uint64(d.DATAO)+uint64(d.DATAL) > 1<<32-1 {
		return DataHeader{}, errf(FESDataOutOfRange, offDATAO, "%s DATAO %d + DATAL %d past 2^32", TypeName(f.Type), d.DATAO, d.DATAL)
	}
	return d, nil
}

// InWindow checks that this PDU's data lies within [off, off+n) of the
// command's data, computed without overflow; FES Data Transfer Out of
// Range when not (TCP §3.6.2.5).
func (d DataHeader) InWindow(off, n uint32) error {
	lo, hi := uint64(d.DATAO), uint64(d.DATAO)+uint64(d.DATAL)
	if lo < uint64(off) || hi > uint64(off)+uint64(n) {
		return &Error{FES: FESDataOutOfRange, FEI: offDATAO,
			Reason: fmt.Sprintf("data [%d,%d) of command %d outside [%d,%d)", lo, hi, d.CCCID, off, uint64(off)+uint64(n))}
	}
	return nil
}

// PutData writes the header of an H2CData or C2HData PDU carrying
// d.DATAL bytes into b (flags: FlagLastPDU, FlagSuccess; the digest flags
// follow from dg), header digest and padding to PDO included (align: the
// receiver's xPDA in bytes). It returns PDO: the data goes at b[PDO:] or
// in a separate write, then its digest when dg.Data.
func PutData(b []byte, t uint8, d DataHeader, flags uint8, dg Digests, align int) int {
	n := putHeader(b, t, DataHLen, flags, int(d.DATAL), dg, align)
	putDataFields(b, d)
	return finishHeader(b, DataHLen, dg, n)
}

// PutR2T writes an R2T PDU asking for d.DATAL bytes at d.DATAO (the
// R2TO / R2TL fields) into b and returns its length (24, 28 with a
// header digest).
func PutR2T(b []byte, d DataHeader, dg Digests) int {
	n := putHeader(b, TypeR2T, R2THLen, 0, 0, dg, 0)
	putDataFields(b, d)
	return finishHeader(b, R2THLen, dg, n)
}

func putDataFields(b []byte, d DataHeader) {
	binary.LittleEndian.PutUint16(b[offCCCID:], d.CCCID)
	binary.LittleEndian.PutUint16(b[offTTAG:], d.TTAG)
	binary.LittleEndian.PutUint32(b[offDATAO:], d.DATAO)
	binary.LittleEndian.PutUint32(b[offDATAL:], d.DATAL)
}
