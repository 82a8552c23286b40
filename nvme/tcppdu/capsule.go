package tcppdu

import "github.com/rdmablk/rdmablk/nvme"

// CapsuleCmd carries a command capsule (TCP §3.6.2.6): the 64-byte SQE
// after the common header, then in-capsule data at PDO.

// ParseCapsuleCmd copies the SQE out of a CapsuleCmd header (b holds at
// least its 72 bytes; Frame has checked the framing).
func ParseCapsuleCmd(b []byte) (nvme.SQE, bool) {
	if len(b) < CapsuleCmdHLen {
		return nvme.SQE{}, false
	}
	return nvme.LoadSQE(b[CommonHeaderSize:])
}

// ParseCapsuleResp copies the CQE out of a CapsuleResp header (24 bytes).
func ParseCapsuleResp(b []byte) (nvme.CQE, bool) {
	if len(b) < CapsuleRespHLen {
		return nvme.CQE{}, false
	}
	return nvme.LoadCQE(b[CommonHeaderSize:])
}

// PutCapsuleCmd writes a CapsuleCmd header for sqe with dataLen bytes of
// in-capsule data into b: the header, its digest when d.Header, and
// padding up to PDO (align: the controller's CPDA in bytes). It returns
// the bytes written (the data, then its digest when d.Data and dataLen >
// 0, follow). b needs PDO bytes.
func PutCapsuleCmd(b []byte, sqe *nvme.SQE, dataLen int, d Digests, align int) int {
	n := putHeader(b, TypeCapsuleCmd, CapsuleCmdHLen, 0, dataLen, d, align)
	copy(b[CommonHeaderSize:CapsuleCmdHLen], sqe[:])
	return finishHeader(b, CapsuleCmdHLen, d, n)
}

// PutCapsuleResp writes a CapsuleResp PDU for cqe into b (24 bytes, 28
// with a header digest) and returns its length.
func PutCapsuleResp(b []byte, cqe *nvme.CQE, d Digests) int {
	n := putHeader(b, TypeCapsuleResp, CapsuleRespHLen, 0, 0, d, 0)
	copy(b[CommonHeaderSize:CapsuleRespHLen], cqe[:])
	return finishHeader(b, CapsuleRespHLen, d, n)
}

// putHeader writes the common header of a PDU of hlen header bytes and
// dataLen data bytes and zeroes the rest of the header, digest and
// padding; it returns PDO (or the header length when there is no data).
func putHeader(b []byte, t uint8, hlen int, flags uint8, dataLen int, d Digests, align int) int {
	hl := hlen
	if d.Header {
		flags |= FlagHDGSTF
		hl += DigestSize
	}
	pdo, plen := 0, hl
	if dataLen > 0 {
		pdo = PDO(hl, align)
		plen = pdo + dataLen
		if d.Data {
			flags |= FlagDDGSTF
			plen += DigestSize
		}
	}
	end := max(pdo, hl)
	clear(b[:end])
	CommonHeader{Type: t, Flags: flags, HLen: uint8(hlen), PDO: uint8(pdo), PLen: uint32(plen)}.Put(b)
	return end
}

// finishHeader puts the header digest once the header is complete.
func finishHeader(b []byte, hlen int, d Digests, n int) int {
	if d.Header {
		PutHeaderDigest(b, hlen)
	}
	return n
}
