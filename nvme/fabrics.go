package nvme

import (
	"bytes"
	"encoding/binary"
)

// Connect command fields (NVMe-oF spec §3.3, Connect command SQE).
// Offsets are within the 64-byte SQE.
const (
	connectRecfmtOff = 40
	connectQIDOff    = 42
	connectSQSizeOff = 44
	connectCattrOff  = 46
	connectKATOOff   = 48
)

// ConnectCmd is a view of a Connect command SQE.
type ConnectCmd struct{ *SQE }

// Recfmt is the record format (0 = version 1.0).
func (c ConnectCmd) Recfmt() uint16 { return binary.LittleEndian.Uint16(c.SQE[connectRecfmtOff:]) }

// QID is the queue to create (0 = admin).
func (c ConnectCmd) QID() uint16 { return binary.LittleEndian.Uint16(c.SQE[connectQIDOff:]) }

// SQSize is the submission queue size, 0's based.
func (c ConnectCmd) SQSize() uint16 { return binary.LittleEndian.Uint16(c.SQE[connectSQSizeOff:]) }

// CATTR is the connect attributes byte.
func (c ConnectCmd) CATTR() uint8 { return c.SQE[connectCattrOff] }

// KATO is the keep-alive timeout in milliseconds (admin queue only).
func (c ConnectCmd) KATO() uint32 { return binary.LittleEndian.Uint32(c.SQE[connectKATOOff:]) }

// SetConnect fills a Connect command (opcode, fctype and fields; RECFMT 0).
// Like every SQE setter it zeroes all bytes except the flags byte, CID and
// SGL1, which the caller sets separately; the connect data is
// ConnectDataSize bytes.
func (s *SQE) SetConnect(qid, sqsize uint16, cattr uint8, kato uint32) {
	s.beginFabrics(FabricsConnect)
	binary.LittleEndian.PutUint16(s[connectQIDOff:], qid)
	binary.LittleEndian.PutUint16(s[connectSQSizeOff:], sqsize)
	s[connectCattrOff] = cattr
	binary.LittleEndian.PutUint32(s[connectKATOOff:], kato)
}

// ConnectDataSize is the size of the Connect command data.
const ConnectDataSize = 1024

// Connect data offsets.
const (
	connectDataHostIDOff  = 0
	connectDataCNTLIDOff  = 16
	connectDataSubNQNOff  = 256
	connectDataHostNQNOff = 512
	// NQNSize is the NQN field size in connect data and identify (NUL padded).
	NQNSize = 256
	// MaxNQNLength is the longest valid NQN (NVMe base spec §4.5): 223 bytes.
	MaxNQNLength = 223
)

// DynamicCNTLID asks the target to allocate a controller (dynamic model).
const DynamicCNTLID = 0xFFFF

// ConnectData is the decoded Connect command data.
type ConnectData struct {
	HostID  [16]byte
	CNTLID  uint16
	SubNQN  string
	HostNQN string
}

// ParseConnectData decodes connect data. It fails on short input or NQN
// fields that are not NUL-terminated within their 256 bytes.
func ParseConnectData(b []byte) (ConnectData, error) {
	var d ConnectData
	if len(b) < ConnectDataSize {
		return d, ErrShort
	}
	copy(d.HostID[:], b[connectDataHostIDOff:])
	d.CNTLID = binary.LittleEndian.Uint16(b[connectDataCNTLIDOff:])
	var ok bool
	if d.SubNQN, ok = cString(b[connectDataSubNQNOff : connectDataSubNQNOff+NQNSize]); !ok {
		return d, ErrBadNQN
	}
	if d.HostNQN, ok = cString(b[connectDataHostNQNOff : connectDataHostNQNOff+NQNSize]); !ok {
		return d, ErrBadNQN
	}
	return d, nil
}

// Marshal encodes d into b (len ≥ ConnectDataSize), zeroing reserved bytes.
// NQNs longer than MaxNQNLength are an error.
func (d *ConnectData) Marshal(b []byte) error {
	if len(b) < ConnectDataSize {
		return ErrShort
	}
	if len(d.SubNQN) > MaxNQNLength || len(d.HostNQN) > MaxNQNLength {
		return ErrBadNQN
	}
	clear(b[:ConnectDataSize])
	copy(b[connectDataHostIDOff:], d.HostID[:])
	binary.LittleEndian.PutUint16(b[connectDataCNTLIDOff:], d.CNTLID)
	copy(b[connectDataSubNQNOff:], d.SubNQN)
	copy(b[connectDataHostNQNOff:], d.HostNQN)
	return nil
}

// cString returns the NUL-terminated string in b; ok is false when there
// is no NUL in b.
func cString(b []byte) (string, bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}

// Property Get / Set (NVMe-oF spec §3.4, §3.5).
const (
	propAttribOff = 40
	propOffsetOff = 44
	propValueOff  = 48
)

// Property offsets (NVMe base spec §3.1, controller registers).
const (
	PropCAP   = 0x00 // 8 bytes
	PropVS    = 0x08 // 4 bytes
	PropINTMS = 0x0C
	PropINTMC = 0x10
	PropCC    = 0x14 // 4 bytes
	PropCSTS  = 0x1C // 4 bytes
	PropNSSR  = 0x20 // 4 bytes
)

// PropertyCmd is a view of a Property Get or Set command.
type PropertyCmd struct{ *SQE }

// Size8 reports an 8-byte property access (ATTRIB.SIZE = 1); otherwise 4.
func (p PropertyCmd) Size8() bool { return p.SQE[propAttribOff]&7 == 1 }

// Attrib is the raw ATTRIB byte.
func (p PropertyCmd) Attrib() uint8 { return p.SQE[propAttribOff] }

// Offset is the property offset.
func (p PropertyCmd) Offset() uint32 { return binary.LittleEndian.Uint32(p.SQE[propOffsetOff:]) }

// Value is the value of a Property Set.
func (p PropertyCmd) Value() uint64 { return binary.LittleEndian.Uint64(p.SQE[propValueOff:]) }

// SetPropertyGet fills a Property Get command (zeroing all bytes except
// flags, CID and SGL1).
func (s *SQE) SetPropertyGet(offset uint32, size8 bool) {
	s.beginFabrics(FabricsPropertyGet)
	if size8 {
		s[propAttribOff] = 1
	}
	binary.LittleEndian.PutUint32(s[propOffsetOff:], offset)
}

// SetPropertySet fills a Property Set command (zeroing all bytes except
// flags, CID and SGL1). For a 4-byte property only the low 32 bits of
// value are meaningful.
func (s *SQE) SetPropertySet(offset uint32, size8 bool, value uint64) {
	s.beginFabrics(FabricsPropertySet)
	if size8 {
		s[propAttribOff] = 1
	}
	binary.LittleEndian.PutUint32(s[propOffsetOff:], offset)
	binary.LittleEndian.PutUint64(s[propValueOff:], value)
}
