package nvme

import "encoding/binary"

// SGLDescSize is the size of an SGL descriptor (NVMe base spec §4.3.2).
const SGLDescSize = 16

// SGL descriptor types (byte 15 bits 7:4).
const (
	SGLTypeDataBlock      = 0x0
	SGLTypeBitBucket      = 0x1
	SGLTypeSegment        = 0x2
	SGLTypeLastSegment    = 0x3
	SGLTypeKeyedDataBlock = 0x4
	SGLTypeTransportBlock = 0x5
)

// SGL descriptor subtypes (byte 15 bits 3:0).
const (
	SGLSubtypeAddress    = 0x0 // address is a host address (keyed: no invalidate)
	SGLSubtypeOffset     = 0x1 // address is an offset into the in-capsule data
	SGLSubtypeTransport  = 0xA // transport specific
	SGLSubtypeInvalidate = 0xF // keyed: invalidate the key after the command
)

// MaxKeyedSGLLength is the largest length a keyed data block can carry
// (24-bit field).
const MaxKeyedSGLLength = 1<<24 - 1

// SGL is a view of one 16-byte SGL descriptor.
type SGL [SGLDescSize]byte

// Type is the descriptor type.
func (d *SGL) Type() uint8 { return d[15] >> 4 }

// Subtype is the descriptor subtype.
func (d *SGL) Subtype() uint8 { return d[15] & 0xf }

// Address is bytes 7:0: an address, or an offset for subtype Offset.
func (d *SGL) Address() uint64 { return binary.LittleEndian.Uint64(d[0:]) }

// Length is the data length: 24 bits for keyed data blocks, 32 bits otherwise.
func (d *SGL) Length() uint32 {
	if d.Type() == SGLTypeKeyedDataBlock {
		return uint32(d[8]) | uint32(d[9])<<8 | uint32(d[10])<<16
	}
	return binary.LittleEndian.Uint32(d[8:])
}

// Key is the remote key of a keyed data block (bytes 14:11).
func (d *SGL) Key() uint32 { return binary.LittleEndian.Uint32(d[11:]) }

// SetKeyed fills a keyed data block descriptor. A length above
// MaxKeyedSGLLength is truncated to 24 bits; callers must check first.
func (d *SGL) SetKeyed(addr uint64, length uint32, key uint32, subtype uint8) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	d[8] = byte(length)
	d[9] = byte(length >> 8)
	d[10] = byte(length >> 16)
	binary.LittleEndian.PutUint32(d[11:], key)
	d[15] = SGLTypeKeyedDataBlock<<4 | subtype&0xf
}

// SetDataBlock fills an (unkeyed) data block descriptor, e.g. in-capsule
// data with subtype Offset.
func (d *SGL) SetDataBlock(addr uint64, length uint32, subtype uint8) {
	binary.LittleEndian.PutUint64(d[0:], addr)
	binary.LittleEndian.PutUint32(d[8:], length)
	d[12], d[13], d[14] = 0, 0, 0
	d[15] = SGLTypeDataBlock<<4 | subtype&0xf
}

// SetNull fills the "no data" descriptor: a keyed data block with zero
// address, length and key (what the Linux host sends for commands without
// data).
func (d *SGL) SetNull() { d.SetKeyed(0, 0, 0, SGLSubtypeAddress) }

// IsKeyed reports a keyed data block descriptor.
func (d *SGL) IsKeyed() bool { return d.Type() == SGLTypeKeyedDataBlock }

// IsInCapsule reports a data block with offset subtype (in-capsule data).
func (d *SGL) IsInCapsule() bool {
	return d.Type() == SGLTypeDataBlock && d.Subtype() == SGLSubtypeOffset
}

// InCapsuleSpan validates an in-capsule data descriptor against the number
// of in-capsule bytes actually received (icdLen), returning the byte span
// [off, off+n) within the in-capsule data. It does not check the descriptor
// type (see IsInCapsule) nor whether the controller allows a non-zero
// offset (SGLS bit 20); the caller does. A negative icdLen is never ok. The
// arithmetic cannot overflow: offset and length are each checked against
// icdLen before being added.
func (d *SGL) InCapsuleSpan(icdLen int) (off, n int, ok bool) {
	if icdLen < 0 {
		return 0, 0, false
	}
	o := d.Address()
	l := uint64(d.Length())
	if o > uint64(icdLen) || l > uint64(icdLen) || o+l > uint64(icdLen) {
		return 0, 0, false
	}
	return int(o), int(l), true
}
