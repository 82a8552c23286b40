package tcppdu

import (
	"encoding/binary"
	"hash/crc32"
)

// castagnoli is the CRC32C table (TCP §3.6.2.1: header and data digests
// are CRC32C, stored little endian). hash/crc32 uses the SSE4.2 / ARMv8
// instruction when the CPU has it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Digest is the CRC32C of b.
func Digest(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// UpdateDigest continues a CRC32C over b (start with 0), for data that
// arrives in pieces.
func UpdateDigest(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// PutHeaderDigest writes the digest of hdr[:hlen] at hdr[hlen:hlen+4].
func PutHeaderDigest(hdr []byte, hlen int) {
	binary.LittleEndian.PutUint32(hdr[hlen:], Digest(hdr[:hlen]))
}

// CheckHeaderDigest checks the header digest of a received header
// (hdr[:hlen] and the digest after it): FES Header Digest Error on a
// mismatch (TCP §3.6.2.5: FEI reserved).
func CheckHeaderDigest(hdr []byte, hlen int) error {
	if hlen < 0 || len(hdr) < hlen+DigestSize {
		return errf(FESInvalidHeaderField, offHLen, "header of %d bytes has no room for its digest", len(hdr))
	}
	got := binary.LittleEndian.Uint32(hdr[hlen:])
	if want := Digest(hdr[:hlen]); got != want {
		return errf(FESHeaderDigestError, 0, "%s header digest %#08x, computed %#08x", TypeName(hdr[0]), got, want)
	}
	return nil
}
