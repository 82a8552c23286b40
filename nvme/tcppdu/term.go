package tcppdu

import "encoding/binary"

// TermReq is an H2CTermReq or C2HTermReq (TCP §3.6.2.4, §3.6.2.5): the
// sender hit a fatal transport error and closes the connection after it.
type TermReq struct {
	FES uint16
	// FEI is the Fatal Error Information: for Invalid Header Field and
	// Unsupported Parameter the byte offset of the field in error,
	// otherwise reserved (0).
	FEI uint32
	// Data is (a prefix of) the PDU header in error, at most 128 bytes.
	Data []byte
}

// PutTermReq writes a TermReq of type t (TypeH2CTermReq or
// TypeC2HTermReq) for e, carrying at most 128 bytes of hdr (the header of
// the PDU in error), into b (at least 152 bytes) and returns its length.
// TermReqs never carry digests.
func PutTermReq(b []byte, t uint8, e *Error, hdr []byte) int {
	hdr = hdr[:min(len(hdr), MaxTermReqData)]
	n := TermReqHLen + len(hdr)
	clear(b[:TermReqHLen])
	CommonHeader{Type: t, HLen: TermReqHLen, PLen: uint32(n)}.Put(b)
	binary.LittleEndian.PutUint16(b[offFES:], e.FES)
	if e.FES == FESInvalidHeaderField || e.FES == FESUnsupportedParam {
		binary.LittleEndian.PutUint32(b[offFEI:], e.FEI)
	}
	copy(b[TermReqHLen:], hdr)
	return n
}

// ParseTermReq parses a complete TermReq PDU (header and error data, as
// located by Frame). An unknown FES is accepted (the connection ends
// either way); Data is a copy.
func ParseTermReq(b []byte, f Frame) (TermReq, error) {
	if f.Type != TypeH2CTermReq && f.Type != TypeC2HTermReq {
		return TermReq{}, errf(FESInvalidHeaderField, 0, "%s is not a TermReq", TypeName(f.Type))
	}
	if len(b) < TermReqHLen || len(b) < f.DataOff+f.DataLen {
		return TermReq{}, errf(FESInvalidHeaderField, offPLen, "TermReq of %d bytes", len(b))
	}
	r := TermReq{FES: binary.LittleEndian.Uint16(b[offFES:]), FEI: binary.LittleEndian.Uint32(b[offFEI:])}
	if f.DataLen > 0 {
		r.Data = append([]byte(nil), b[f.DataOff:f.DataOff+f.DataLen]...)
	}
	return r, nil
}
