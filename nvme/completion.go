package nvme

import "encoding/binary"

// CQESize is the size of a completion queue entry (NVMe base spec §4.6).
const CQESize = 16

// CQE is a 16-byte completion queue entry (response capsule).
type CQE [CQESize]byte

// LoadCQE copies the first 16 bytes of b. It returns false if b is shorter.
func LoadCQE(b []byte) (CQE, bool) {
	var c CQE
	if len(b) < CQESize {
		return c, false
	}
	copy(c[:], b)
	return c, true
}

// DW0 is the command-specific result dword 0.
func (c *CQE) DW0() uint32 { return binary.LittleEndian.Uint32(c[0:]) }

// SetDW0 sets dword 0.
func (c *CQE) SetDW0(v uint32) { binary.LittleEndian.PutUint32(c[0:], v) }

// DW1 is dword 1.
func (c *CQE) DW1() uint32 { return binary.LittleEndian.Uint32(c[4:]) }

// SetDW1 sets dword 1.
func (c *CQE) SetDW1(v uint32) { binary.LittleEndian.PutUint32(c[4:], v) }

// Result64 is dwords 0-1 as one 64-bit value (Property Get result).
func (c *CQE) Result64() uint64 { return binary.LittleEndian.Uint64(c[0:]) }

// SetResult64 sets dwords 0-1.
func (c *CQE) SetResult64(v uint64) { binary.LittleEndian.PutUint64(c[0:], v) }

// SQHD is the submission queue head pointer.
func (c *CQE) SQHD() uint16 { return binary.LittleEndian.Uint16(c[8:]) }

// SetSQHD sets the submission queue head pointer.
func (c *CQE) SetSQHD(v uint16) { binary.LittleEndian.PutUint16(c[8:], v) }

// SQID is the submission queue identifier.
func (c *CQE) SQID() uint16 { return binary.LittleEndian.Uint16(c[10:]) }

// SetSQID sets the submission queue identifier.
func (c *CQE) SetSQID(v uint16) { binary.LittleEndian.PutUint16(c[10:], v) }

// CID is the command identifier being completed.
func (c *CQE) CID() uint16 { return binary.LittleEndian.Uint16(c[12:]) }

// SetCID sets the command identifier.
func (c *CQE) SetCID(v uint16) { binary.LittleEndian.PutUint16(c[12:], v) }

// Phase is the phase tag (bit 0 of the status field); fabrics ignore it.
func (c *CQE) Phase() bool { return c[14]&1 != 0 }

// Status is the status field without the phase tag.
func (c *CQE) Status() Status {
	return Status(binary.LittleEndian.Uint16(c[14:]) >> 1)
}

// SetStatus sets the status field, keeping the phase tag.
func (c *CQE) SetStatus(s Status) {
	p := binary.LittleEndian.Uint16(c[14:]) & 1
	binary.LittleEndian.PutUint16(c[14:], uint16(s)<<1|p)
}

// Reset zeroes the entry.
func (c *CQE) Reset() { *c = CQE{} }
