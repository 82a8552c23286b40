package nvme

import "encoding/binary"

// Commands Supported and Effects log page (NVMe base spec 2.0 §5.16.1.6,
// Figures 211-212; LID 05h): 256 admin entries (bytes 1023:0), then 256
// I/O entries (bytes 2047:1024), 4 bytes each indexed by opcode; the rest
// of the 4096 bytes reserved.

// CommandsEffectsLogSize is the size of the commands effects log page.
const CommandsEffectsLogSize = 4096

// Commands effects entry bits.
const (
	CECSUPP        = 1 << 0  // command supported
	CELBCC         = 1 << 1  // logical block content change
	CENCC          = 1 << 2  // namespace capability change
	CENIC          = 1 << 3  // namespace inventory change
	CECCC          = 1 << 4  // controller capability change
	CECSESingleNS  = 1 << 16 // CSE: no other command for this namespace
	CECSESingleAll = 2 << 16 // CSE: no other command for any namespace
)

// CommandsEffectsLog is the commands supported and effects log, indexed by
// opcode.
type CommandsEffectsLog struct {
	ACS  [256]uint32 // admin command set
	IOCS [256]uint32 // I/O command set
}

// Marshal encodes l into b[:CommandsEffectsLogSize], zeroing reserved
// bytes. It returns ErrShort (b unchanged) when b is too short.
func (l *CommandsEffectsLog) Marshal(b []byte) error {
	if len(b) < CommandsEffectsLogSize {
		return ErrShort
	}
	b = b[:CommandsEffectsLogSize]
	clear(b)
	for i, v := range l.ACS {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	for i, v := range l.IOCS {
		binary.LittleEndian.PutUint32(b[1024+4*i:], v)
	}
	return nil
}

// ParseCommandsEffectsLog decodes a commands supported and effects log.
func ParseCommandsEffectsLog(b []byte) (CommandsEffectsLog, error) {
	var l CommandsEffectsLog
	if len(b) < CommandsEffectsLogSize {
		return l, ErrShort
	}
	for i := range l.ACS {
		l.ACS[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	for i := range l.IOCS {
		l.IOCS[i] = binary.LittleEndian.Uint32(b[1024+4*i:])
	}
	return l, nil
}
