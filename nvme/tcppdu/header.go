package tcppdu

import (
	"encoding/binary"
	"fmt"
)

// PDU types (TCP §3.6.1, Figure "PDU-Type values").
const (
	TypeICReq       = 0x00
	TypeICResp      = 0x01
	TypeH2CTermReq  = 0x02
	TypeC2HTermReq  = 0x03
	TypeCapsuleCmd  = 0x04
	TypeCapsuleResp = 0x05
	TypeH2CData     = 0x06
	TypeC2HData     = 0x07
	TypeR2T         = 0x09
)

// Common header FLAGS bits (TCP §3.6.1). HDGSTF and DDGSTF say a header /
// data digest is present; LastPDU and Success are for H2CData / C2HData.
const (
	FlagHDGSTF  = 1 << 0
	FlagDDGSTF  = 1 << 1
	FlagLastPDU = 1 << 2
	FlagSuccess = 1 << 3
)

// Sizes.
const (
	CommonHeaderSize = 8
	DigestSize       = 4
	// HLEN of each PDU type (TCP §3.6.2): the header without its digest.
	ICReqHLen       = 128
	ICRespHLen      = 128
	TermReqHLen     = 24
	CapsuleCmdHLen  = CommonHeaderSize + 64 // + SQE
	CapsuleRespHLen = CommonHeaderSize + 16 // + CQE
	DataHLen        = 24                    // H2CData and C2HData
	R2THLen         = 24
	// MaxTermReqData is the most of the PDU header in error a TermReq
	// carries (PLEN at most 152).
	MaxTermReqData = 128
	// MinMaxH2CData is the smallest MAXH2CDATA a controller may
	// announce (TCP §3.6.2.3).
	MinMaxH2CData = 4096
	// MaxDataAlign is the largest data alignment HPDA / CPDA can ask
	// for: (31 + 1) dwords.
	MaxDataAlign = 128
)

// Fatal Error Status values of H2CTermReq / C2HTermReq (TCP §3.6.2.5).
const (
	FESInvalidHeaderField  = 0x01 // FEI: byte offset of the field
	FESPDUSequenceError    = 0x02
	FESHeaderDigestError   = 0x03
	FESDataOutOfRange      = 0x04 // H2CData/C2HData outside the command's data or R2T window
	FESDataLimitExceeded   = 0x05 // R2T limit / MAXH2CDATA exceeded
	FESUnsupportedParam    = 0x06 // FEI: byte offset of the parameter
	offFlags, offHLen      = 1, 2
	offPDO, offPLen        = 3, 4
	offCCCID, offTTAG      = 8, 10
	offDATAO, offDATAL     = 12, 16
	offFES, offFEI         = 8, 10
	offPFV, offPDA, offDGS = 8, 10, 11
	offMAXR2T              = 12
)

// Error is a PDU rejected by a receiver: the TermReq to send (FES, FEI)
// and why, for the log.
type Error struct {
	FES    uint16
	FEI    uint32
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("nvme/tcp: %s (FES %#x %s, FEI %d)", e.Reason, e.FES, FESName(e.FES), e.FEI)
}

func errf(fes uint16, fei uint32, format string, a ...any) *Error {
	return &Error{FES: fes, FEI: fei, Reason: fmt.Sprintf(format, a...)}
}

// FESName names a Fatal Error Status.
func FESName(fes uint16) string {
	switch fes {
	case FESInvalidHeaderField:
		return "invalid PDU header field"
	case FESPDUSequenceError:
		return "PDU sequence error"
	case FESHeaderDigestError:
		return "header digest error"
	case FESDataOutOfRange:
		return "data transfer out of range"
	case FESDataLimitExceeded:
		return "data transfer limit exceeded"
	case FESUnsupportedParam:
		return "unsupported parameter"
	}
	return "unknown"
}

// TypeName names a PDU type for logs.
func TypeName(t uint8) string {
	switch t {
	case TypeICReq:
		return "ICReq"
	case TypeICResp:
		return "ICResp"
	case TypeH2CTermReq:
		return "H2CTermReq"
	case TypeC2HTermReq:
		return "C2HTermReq"
	case TypeCapsuleCmd:
		return "CapsuleCmd"
	case TypeCapsuleResp:
		return "CapsuleResp"
	case TypeH2CData:
		return "H2CData"
	case TypeC2HData:
		return "C2HData"
	case TypeR2T:
		return "R2T"
	}
	return fmt.Sprintf("type %#x", t)
}

// CommonHeader is the 8-byte header every PDU starts with (TCP §3.6.1).
type CommonHeader struct {
	Type  uint8
	Flags uint8
	HLen  uint8  // header length without the header digest
	PDO   uint8  // PDU data offset: where data starts, 0 when none
	PLen  uint32 // total PDU length, digests and padding included
}

// ParseCommonHeader reads the common header from b (at least 8 bytes). It
// checks nothing but the length; Frame validates.
func ParseCommonHeader(b []byte) (CommonHeader, bool) {
	if len(b) < CommonHeaderSize {
		return CommonHeader{}, false
	}
	return CommonHeader{Type: b[0], Flags: b[1], HLen: b[2], PDO: b[3], PLen: binary.LittleEndian.Uint32(b[4:])}, true
}

// Put writes h into b[:8].
func (h CommonHeader) Put(b []byte) {
	_ = b[7]
	b[0], b[1], b[2], b[3] = h.Type, h.Flags, h.HLen, h.PDO
	binary.LittleEndian.PutUint32(b[4:], h.PLen)
}

// typeInfo is the fixed shape of a PDU type.
type typeInfo struct {
	hlen    int
	digests bool // may carry header / data digests
	data    bool // may carry data (TermReq: error data, no digest)
}

func info(t uint8) (typeInfo, bool) {
	switch t {
	case TypeICReq:
		return typeInfo{hlen: ICReqHLen}, true
	case TypeICResp:
		return typeInfo{hlen: ICRespHLen}, true
	case TypeH2CTermReq, TypeC2HTermReq:
		return typeInfo{hlen: TermReqHLen, data: true}, true
	case TypeCapsuleCmd:
		return typeInfo{hlen: CapsuleCmdHLen, digests: true, data: true}, true
	case TypeCapsuleResp:
		return typeInfo{hlen: CapsuleRespHLen, digests: true}, true
	case TypeH2CData, TypeC2HData:
		return typeInfo{hlen: DataHLen, digests: true, data: true}, true
	case TypeR2T:
		return typeInfo{hlen: R2THLen, digests: true}, true
	}
	return typeInfo{}, false
}

// HLen is the fixed HLEN of a PDU type, 0 for an unknown type.
func HLen(t uint8) int {
	ti, _ := info(t)
	return ti.hlen
}

// Digests are the digests negotiated at connection setup (ICReq DGST
// bits, granted in ICResp).
type Digests struct {
	Header bool
	Data   bool
}

// DGST bits of ICReq / ICResp.
const (
	DGSTHeader = 1 << 0
	DGSTData   = 1 << 1
)

// Bits returns the DGST field value.
func (d Digests) Bits() uint8 {
	var v uint8
	if d.Header {
		v |= DGSTHeader
	}
	if d.Data {
		v |= DGSTData
	}
	return v
}

// Limits are what a receiver accepts for one PDU.
type Limits struct {
	// Digests negotiated on the connection (none before ICResp).
	Digests Digests
	// Align is the data alignment the receiver asked of its peer, bytes
	// ((CPDA+1)*4 for a controller, (HPDA+1)*4 for a host; 0 or 4: none).
	Align int
	// MaxData is the largest data length the receiver accepts in this
	// PDU type (in-capsule data size, MAXH2CDATA, the command's length...).
	MaxData int
}

// Frame is the layout of a received PDU within PLEN, checked.
type Frame struct {
	CommonHeader
	// HeaderLen is HLEN plus the header digest, if any: the bytes to read
	// before the header can be parsed.
	HeaderLen int
	// HeaderDigest: the header digest follows HLEN bytes.
	HeaderDigest bool
	// DataOff and DataLen locate the data (0, 0 when none). The bytes
	// between HeaderLen and DataOff are padding.
	DataOff int
	DataLen int
	// DataDigest: a data digest follows the data.
	DataDigest bool
}

// Frame validates h as a PDU of a known type under l and returns its
// layout. It checks HLEN against the type, the digest flags against the
// negotiated digests (TCP §3.6.1: when a digest is enabled, every PDU of
// a type that may carry it has it — a data digest only when the PDU has
// data; ICReq, ICResp and TermReqs never do), PDO against the header,
// digest and alignment, and PLEN against the data limit. Lengths are
// compared in 64-bit arithmetic: nothing wraps. It does not decide
// whether the type is allowed now (the caller's PDU sequence check).
func (h CommonHeader) Frame(l Limits) (Frame, error) {
	ti, ok := info(h.Type)
	if !ok {
		return Frame{}, errf(FESInvalidHeaderField, 0, "unknown PDU type %#x", h.Type)
	}
	if int(h.HLen) != ti.hlen {
		return Frame{}, errf(FESInvalidHeaderField, offHLen, "%s HLEN %d, want %d", TypeName(h.Type), h.HLen, ti.hlen)
	}
	f := Frame{CommonHeader: h, HeaderLen: ti.hlen}
	hd := h.Flags&FlagHDGSTF != 0
	dd := h.Flags&FlagDDGSTF != 0
	if !ti.digests {
		if hd || dd {
			return Frame{}, errf(FESInvalidHeaderField, offFlags, "%s with digest flags %#x", TypeName(h.Type), h.Flags)
		}
	} else if hd != l.Digests.Header {
		return Frame{}, errf(FESInvalidHeaderField, offFlags, "%s HDGSTF %v, header digest negotiated %v", TypeName(h.Type), hd, l.Digests.Header)
	}
	if hd {
		f.HeaderDigest = true
		f.HeaderLen += DigestSize
	}
	plen := uint64(h.PLen)
	if plen < uint64(f.HeaderLen) {
		return Frame{}, errf(FESInvalidHeaderField, offPLen, "%s PLEN %d shorter than its header (%d)", TypeName(h.Type), h.PLen, f.HeaderLen)
	}
	if plen == uint64(f.HeaderLen) {
		// No data.
		if h.PDO != 0 && int(h.PDO) != f.HeaderLen && int(h.PDO) != ti.hlen {
			return Frame{}, errf(FESInvalidHeaderField, offPDO, "%s PDO %d without data", TypeName(h.Type), h.PDO)
		}
		if dd {
			return Frame{}, errf(FESInvalidHeaderField, offFlags, "%s DDGSTF without data", TypeName(h.Type))
		}
		return f, nil
	}
	if !ti.data {
		return Frame{}, errf(FESInvalidHeaderField, offPLen, "%s PLEN %d, want %d (no data)", TypeName(h.Type), h.PLen, f.HeaderLen)
	}
	if !ti.digests {
		// TermReq: the error data follows the header directly.
		n := plen - uint64(f.HeaderLen)
		if n > MaxTermReqData {
			return Frame{}, errf(FESInvalidHeaderField, offPLen, "%s PLEN %d over %d", TypeName(h.Type), h.PLen, ti.hlen+MaxTermReqData)
		}
		if h.PDO != 0 && int(h.PDO) != f.HeaderLen {
			return Frame{}, errf(FESInvalidHeaderField, offPDO, "%s PDO %d", TypeName(h.Type), h.PDO)
		}
		f.DataOff, f.DataLen = f.HeaderLen, int(n)
		return f, nil
	}
	if dd != l.Digests.Data {
		return Frame{}, errf(FESInvalidHeaderField, offFlags, "%s DDGSTF %v, data digest negotiated %v", TypeName(h.Type), dd, l.Digests.Data)
	}
	align := l.Align
	if align < 4 {
		align = 1
	}
	want := (f.HeaderLen + align - 1) / align * align
	if int(h.PDO) != want {
		return Frame{}, errf(FESInvalidHeaderField, offPDO, "%s PDO %d, want %d", TypeName(h.Type), h.PDO, want)
	}
	tail := uint64(want)
	if dd {
		tail += DigestSize
	}
	if plen <= tail {
		return Frame{}, errf(FESInvalidHeaderField, offPLen, "%s PLEN %d leaves no data after PDO %d", TypeName(h.Type), h.PLen, h.PDO)
	}
	n := plen - tail
	if n > uint64(max(l.MaxData, 0)) {
		fes := uint16(FESInvalidHeaderField)
		if h.Type == TypeH2CData || h.Type == TypeC2HData {
			fes = FESDataLimitExceeded
		}
		return Frame{}, &Error{FES: fes, FEI: offPLen,
			Reason: fmt.Sprintf("%s carries %d bytes of data, at most %d accepted", TypeName(h.Type), n, max(l.MaxData, 0))}
	}
	f.DataOff, f.DataLen, f.DataDigest = want, int(n), dd
	return f, nil
}

// PDO is the PDU data offset of a PDU the sender builds: the header (and
// its digest), headerLen bytes, rounded up to the data alignment align
// (the peer's (xPDA+1)*4; below 4 means none).
func PDO(headerLen, align int) int {
	if align < 4 {
		return headerLen
	}
	return (headerLen + align - 1) / align * align
}

// PDAAlign converts an HPDA / CPDA value (0's based dwords) to bytes.
func PDAAlign(pda uint8) int { return (int(pda) + 1) * 4 }
