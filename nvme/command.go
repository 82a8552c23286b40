package nvme

import "encoding/binary"

// SQESize is the size of a submission queue entry (NVMe base spec §4.2).
const SQESize = 64

// PSDT values of CDW0 bits 15:14 (NVMe base spec §4.2, Figure "Command Dword 0").
const (
	PSDTPRP    = 0 // PRPs: not used over fabrics
	PSDTSGL    = 1 // SGL for data, metadata pointer is an address (Linux NVME_CMD_SGL_METABUF)
	PSDTSGLSeg = 2 // SGL for data, metadata pointer is an SGL segment
)

// SQE is a 64-byte submission queue entry (command capsule header). It is a
// value type; views over received capsules copy it with LoadSQE.
type SQE [SQESize]byte

// LoadSQE copies the first 64 bytes of b into an SQE. It returns false if b
// is shorter than 64 bytes.
func LoadSQE(b []byte) (SQE, bool) {
	var s SQE
	if len(b) < SQESize {
		return s, false
	}
	copy(s[:], b)
	return s, true
}

// Opcode is CDW0 bits 7:0.
func (s *SQE) Opcode() uint8 { return s[0] }

// SetOpcode sets CDW0 bits 7:0.
func (s *SQE) SetOpcode(op uint8) { s[0] = op }

// Flags is CDW0 bits 15:8 (FUSE 9:8, PSDT 15:14).
func (s *SQE) Flags() uint8 { return s[1] }

// SetFlags sets CDW0 bits 15:8.
func (s *SQE) SetFlags(f uint8) { s[1] = f }

// PSDT is the PRP or SGL for Data Transfer field.
func (s *SQE) PSDT() uint8 { return s[1] >> 6 }

// SetPSDT sets the PSDT field, keeping the other flag bits.
func (s *SQE) SetPSDT(p uint8) { s[1] = s[1]&0x3f | p<<6 }

// FUSE is the fused-operation field.
func (s *SQE) FUSE() uint8 { return s[1] & 3 }

// CID is the command identifier (CDW0 bits 31:16).
func (s *SQE) CID() uint16 { return binary.LittleEndian.Uint16(s[2:]) }

// SetCID sets the command identifier.
func (s *SQE) SetCID(cid uint16) { binary.LittleEndian.PutUint16(s[2:], cid) }

// NSID is the namespace identifier (CDW1).
func (s *SQE) NSID() uint32 { return binary.LittleEndian.Uint32(s[4:]) }

// SetNSID sets the namespace identifier.
func (s *SQE) SetNSID(n uint32) { binary.LittleEndian.PutUint32(s[4:], n) }

// MPTR is the metadata pointer (bytes 23:16).
func (s *SQE) MPTR() uint64 { return binary.LittleEndian.Uint64(s[16:]) }

// SGL1 is a view of the first SGL descriptor in the data pointer (bytes 39:24).
func (s *SQE) SGL1() *SGL { return (*SGL)(s[24:40]) }

// CDW returns command dword n (0 ≤ n ≤ 15); out-of-range n returns 0.
func (s *SQE) CDW(n int) uint32 {
	if n < 0 || n > 15 {
		return 0
	}
	return binary.LittleEndian.Uint32(s[4*n:])
}

// SetCDW sets command dword n (2 ≤ n ≤ 15 are the only sensible ones); an
// out-of-range n is ignored.
func (s *SQE) SetCDW(n int, v uint32) {
	if n < 0 || n > 15 {
		return
	}
	binary.LittleEndian.PutUint32(s[4*n:], v)
}

// CDW10 … CDW15 shortcuts.
func (s *SQE) CDW10() uint32 { return s.CDW(10) }
func (s *SQE) CDW11() uint32 { return s.CDW(11) }
func (s *SQE) CDW12() uint32 { return s.CDW(12) }
func (s *SQE) CDW13() uint32 { return s.CDW(13) }
func (s *SQE) CDW14() uint32 { return s.CDW(14) }
func (s *SQE) CDW15() uint32 { return s.CDW(15) }

// IsFabrics reports whether the command is a fabrics command (opcode 0x7F).
func (s *SQE) IsFabrics() bool { return s[0] == OpFabrics }

// FCType is the fabrics command type (byte 4) of a fabrics command.
func (s *SQE) FCType() uint8 { return s[4] }

// SetFCType sets the fabrics command type.
func (s *SQE) SetFCType(t uint8) { s[4] = t }

// begin starts a SetXxx command setter: it writes the opcode and zeroes
// every byte the setter owns, i.e. all bytes except CDW0 bits 31:8 (flags
// byte with FUSE/PSDT, and CID) and the data pointer (bytes 39:24). So a
// setter never leaves stale fields or non-zero reserved bytes from an
// earlier use of the SQE, and the CID and SGL1 may be set before or after it.
func (s *SQE) begin(op uint8) {
	s[0] = op
	clear(s[4:24])
	clear(s[40:SQESize])
}

// beginFabrics is begin for a fabrics command of type fctype.
func (s *SQE) beginFabrics(fctype uint8) {
	s.begin(OpFabrics)
	s[4] = fctype
}
