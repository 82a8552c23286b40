package tcppdu

import "encoding/binary"

// PFV10 is the PDU format version of NVMe/TCP 1.0, the only one defined.
const PFV10 = 0

// ICReq is the host's Initialize Connection Request (TCP §3.6.2.2), the
// first PDU on a connection.
type ICReq struct {
	PFV  uint16
	HPDA uint8 // host PDU data alignment, 0's based dwords (0..31)
	DGST uint8 // DGSTHeader | DGSTData: digests the host wants
	// MAXR2T is the number of outstanding R2Ts per command the host
	// accepts, 0's based.
	MAXR2T uint32
}

// ICResp is the controller's Initialize Connection Response
// (TCP §3.6.2.3).
type ICResp struct {
	PFV  uint16
	CPDA uint8 // controller PDU data alignment, 0's based dwords (0..31)
	DGST uint8 // digests enabled on the connection
	// MAXH2CDATA is the most data one H2CData PDU may carry, bytes
	// (≥ 4096, a multiple of 4).
	MAXH2CDATA uint32
}

// ParseICReq parses a complete ICReq PDU (b holds at least its 128
// bytes, common header included), checking what a controller must:
// the framing (type, HLEN, PLEN, no digests), PFV 1.0 (else FES
// Unsupported Parameter) and HPDA ≤ 31 (else Invalid Header Field).
// Reserved DGST bits are ignored.
func ParseICReq(b []byte) (ICReq, error) {
	if err := checkIC(b, TypeICReq); err != nil {
		return ICReq{}, err
	}
	r := ICReq{PFV: binary.LittleEndian.Uint16(b[offPFV:]), HPDA: b[offPDA], DGST: b[offDGS] & (DGSTHeader | DGSTData),
		MAXR2T: binary.LittleEndian.Uint32(b[offMAXR2T:])}
	if r.PFV != PFV10 {
		return ICReq{}, errf(FESUnsupportedParam, offPFV, "ICReq PFV %d, only 0 (NVMe/TCP 1.0) is supported", r.PFV)
	}
	if r.HPDA > 31 {
		// A reserved value: an invalid field (as SPDK), not an
		// unsupported parameter.
		return ICReq{}, errf(FESInvalidHeaderField, offPDA, "ICReq HPDA %d over 31", r.HPDA)
	}
	return r, nil
}

// ParseICResp parses a complete ICResp PDU (a host's check): the
// framing, PFV 1.0, CPDA ≤ 31, MAXH2CDATA ≥ 4096 and dword-aligned.
func ParseICResp(b []byte) (ICResp, error) {
	if err := checkIC(b, TypeICResp); err != nil {
		return ICResp{}, err
	}
	r := ICResp{PFV: binary.LittleEndian.Uint16(b[offPFV:]), CPDA: b[offPDA], DGST: b[offDGS] & (DGSTHeader | DGSTData),
		MAXH2CDATA: binary.LittleEndian.Uint32(b[offMAXR2T:])}
	switch {
	case r.PFV != PFV10:
		return ICResp{}, errf(FESUnsupportedParam, offPFV, "ICResp PFV %d", r.PFV)
	case r.CPDA > 31:
		return ICResp{}, errf(FESInvalidHeaderField, offPDA, "ICResp CPDA %d over 31", r.CPDA)
	case r.MAXH2CDATA < MinMaxH2CData || r.MAXH2CDATA%4 != 0:
		return ICResp{}, errf(FESInvalidHeaderField, offMAXR2T, "ICResp MAXH2CDATA %d", r.MAXH2CDATA)
	}
	return r, nil
}

func checkIC(b []byte, t uint8) error {
	h, ok := ParseCommonHeader(b)
	if ok && h.Type != t {
		return errf(FESInvalidHeaderField, 0, "%s where %s was expected", TypeName(h.Type), TypeName(t))
	}
	if !ok || len(b) < ICReqHLen {
		return errf(FESInvalidHeaderField, offPLen, "%s of %d bytes, want 128", TypeName(t), len(b))
	}
	if _, err := h.Frame(Limits{}); err != nil {
		return err
	}
	if h.PLen != ICReqHLen {
		return errf(FESInvalidHeaderField, offPLen, "%s PLEN %d, want 128", TypeName(t), h.PLen)
	}
	return nil
}

// Marshal writes the ICReq PDU into b[:128] (reserved bytes zeroed).
func (r ICReq) Marshal(b []byte) {
	putIC(b, TypeICReq, r.PFV, r.HPDA, r.DGST, r.MAXR2T)
}

// Marshal writes the ICResp PDU into b[:128] (reserved bytes zeroed).
func (r ICResp) Marshal(b []byte) {
	putIC(b, TypeICResp, r.PFV, r.CPDA, r.DGST, r.MAXH2CDATA)
}

func putIC(b []byte, t uint8, pfv uint16, pda, dgst uint8, v uint32) {
	b = b[:ICReqHLen]
	clear(b)
	CommonHeader{Type: t, HLen: ICReqHLen, PLen: ICReqHLen}.Put(b)
	binary.LittleEndian.PutUint16(b[offPFV:], pfv)
	b[offPDA], b[offDGS] = pda, dgst
	binary.LittleEndian.PutUint32(b[offMAXR2T:], v)
}
