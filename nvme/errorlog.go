package nvme

import "encoding/binary"

// Error Information log page entry (NVMe base spec 2.0 §5.16.1.2, Figure
// 205; LID 01h). The log is an array of 64-byte entries, newest first.

// ErrorLogEntrySize is the size of one error log entry.
const ErrorLogEntrySize = 64

// Error log entry offsets.
const (
	elErrorCount = 0  // 8 bytes
	elSQID       = 8  // 2
	elCID        = 10 // 2
	elStatus     = 12 // 2: bit 0 phase tag, bits 15:1 status field
	elParamLoc   = 14 // 2: byte 7:0, bit 10:8 within the command
	elLBA        = 16 // 8
	elNSID       = 24 // 4
	elVSInfo     = 28 // 1
	elTrType     = 29 // 1
	elCSI        = 32 // 8: command specific information
	elTTSI       = 40 // 2: transport type specific information
)

// ErrorLogEntry is one decoded error log entry. ErrorCount 0 marks an
// unused entry.
type ErrorLogEntry struct {
	ErrorCount    uint64
	SQID          uint16
	CID           uint16
	Status        Status // without the phase tag
	ParamErrorLoc uint16 // 0xFFFF when not applicable
	LBA           uint64
	NSID          uint32
	VSInfo        uint8 // vendor specific log page id, 0 = none
	TrType        uint8 // transport type (TrType*)
	CommandInfo   uint64
	TrTypeInfo    uint16
}

// Marshal encodes e into b[:ErrorLogEntrySize], zeroing reserved bytes. It
// returns ErrShort (b unchanged) when b is too short.
func (e *ErrorLogEntry) Marshal(b []byte) error {
	if len(b) < ErrorLogEntrySize {
		return ErrShort
	}
	b = b[:ErrorLogEntrySize]
	clear(b)
	le := binary.LittleEndian
	le.PutUint64(b[elErrorCount:], e.ErrorCount)
	le.PutUint16(b[elSQID:], e.SQID)
	le.PutUint16(b[elCID:], e.CID)
	le.PutUint16(b[elStatus:], uint16(e.Status)<<1)
	le.PutUint16(b[elParamLoc:], e.ParamErrorLoc)
	le.PutUint64(b[elLBA:], e.LBA)
	le.PutUint32(b[elNSID:], e.NSID)
	b[elVSInfo] = e.VSInfo
	b[elTrType] = e.TrType
	le.PutUint64(b[elCSI:], e.CommandInfo)
	le.PutUint16(b[elTTSI:], e.TrTypeInfo)
	return nil
}

// ParseErrorLogEntry decodes one entry from b[:ErrorLogEntrySize].
func ParseErrorLogEntry(b []byte) (ErrorLogEntry, error) {
	var e ErrorLogEntry
	if len(b) < ErrorLogEntrySize {
		return e, ErrShort
	}
	le := binary.LittleEndian
	e.ErrorCount = le.Uint64(b[elErrorCount:])
	e.SQID = le.Uint16(b[elSQID:])
	e.CID = le.Uint16(b[elCID:])
	e.Status = Status(le.Uint16(b[elStatus:]) >> 1)
	e.ParamErrorLoc = le.Uint16(b[elParamLoc:])
	e.LBA = le.Uint64(b[elLBA:])
	e.NSID = le.Uint32(b[elNSID:])
	e.VSInfo = b[elVSInfo]
	e.TrType = b[elTrType]
	e.CommandInfo = le.Uint64(b[elCSI:])
	e.TrTypeInfo = le.Uint16(b[elTTSI:])
	return e, nil
}
