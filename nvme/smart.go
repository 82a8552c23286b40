package nvme

import "encoding/binary"

// SMART / Health Information log page (NVMe base spec 2.0 §5.16.1.3,
// Figure 207; LID 02h), 512 bytes.

// SMARTLogSize is the size of the SMART / Health Information log page.
const SMARTLogSize = 512

// Critical warning bits (byte 0).
const (
	SMARTWarnSpare       = 1 << 0
	SMARTWarnTemperature = 1 << 1
	SMARTWarnReliability = 1 << 2
	SMARTWarnReadOnly    = 1 << 3
	SMARTWarnVolatileMem = 1 << 4
)

// SMART log offsets.
const (
	smCritWarn     = 0
	smTemp         = 1 // 2 bytes, Kelvin
	smAvailSpare   = 3
	smSpareThresh  = 4
	smPercentUsed  = 5
	smEGCritWarn   = 6
	smDataRead     = 32 // 16-byte counters from here to 191
	smDataWritten  = 48
	smHostReads    = 64
	smHostWrites   = 80
	smBusyTime     = 96
	smPowerCycles  = 112
	smPowerOnHours = 128
	smUnsafeShut   = 144
	smMediaErrors  = 160
	smNumErrLog    = 176
	smWarnTempTime = 192 // 4 bytes, minutes
	smCritTempTime = 196 // 4 bytes, minutes
	smTempSensor   = 200 // 8 × 2 bytes, Kelvin
	smTMT1Count    = 216
	smTMT2Count    = 220
	smTMT1Time     = 224
	smTMT2Time     = 228
)

// SMARTLog is the SMART / Health Information log. The spec's 128-bit
// counters are kept as their low 64 bits (written with a zero high half;
// decoded saturating at MaxUint64). Data units are thousands of 512-byte
// units, rounded up.
type SMARTLog struct {
	CriticalWarning   uint8
	Temperature       uint16 // composite temperature, Kelvin
	AvailSpare        uint8  // percent
	SpareThresh       uint8  // percent
	PercentUsed       uint8
	EGCritWarnSummary uint8
	DataUnitsRead     uint64
	DataUnitsWritten  uint64
	HostReads         uint64 // read commands completed
	HostWrites        uint64 // write commands completed
	CtrlBusyTime      uint64 // minutes
	PowerCycles       uint64
	PowerOnHours      uint64
	UnsafeShutdowns   uint64
	MediaErrors       uint64
	NumErrLogEntries  uint64
	WarningTempTime   uint32 // minutes
	CriticalTempTime  uint32 // minutes
	TempSensor        [8]uint16
	TMT1TransCount    uint32
	TMT2TransCount    uint32
	TMT1TotalTime     uint32
	TMT2TotalTime     uint32
}

// Marshal encodes l into b[:SMARTLogSize], zeroing reserved bytes. It
// returns ErrShort (b unchanged) when b is too short.
func (l *SMARTLog) Marshal(b []byte) error {
	if len(b) < SMARTLogSize {
		return ErrShort
	}
	b = b[:SMARTLogSize]
	clear(b)
	le := binary.LittleEndian
	b[smCritWarn] = l.CriticalWarning
	le.PutUint16(b[smTemp:], l.Temperature)
	b[smAvailSpare] = l.AvailSpare
	b[smSpareThresh] = l.SpareThresh
	b[smPercentUsed] = l.PercentUsed
	b[smEGCritWarn] = l.EGCritWarnSummary
	for _, f := range l.counters() {
		putUint128(b[f.off:], *f.v)
	}
	le.PutUint32(b[smWarnTempTime:], l.WarningTempTime)
	le.PutUint32(b[smCritTempTime:], l.CriticalTempTime)
	for i, t := range l.TempSensor {
		le.PutUint16(b[smTempSensor+2*i:], t)
	}
	le.PutUint32(b[smTMT1Count:], l.TMT1TransCount)
	le.PutUint32(b[smTMT2Count:], l.TMT2TransCount)
	le.PutUint32(b[smTMT1Time:], l.TMT1TotalTime)
	le.PutUint32(b[smTMT2Time:], l.TMT2TotalTime)
	return nil
}

// ParseSMARTLog decodes a SMART / Health Information log page.
func ParseSMARTLog(b []byte) (SMARTLog, error) {
	var l SMARTLog
	if len(b) < SMARTLogSize {
		return l, ErrShort
	}
	le := binary.LittleEndian
	l.CriticalWarning = b[smCritWarn]
	l.Temperature = le.Uint16(b[smTemp:])
	l.AvailSpare = b[smAvailSpare]
	l.SpareThresh = b[smSpareThresh]
	l.PercentUsed = b[smPercentUsed]
	l.EGCritWarnSummary = b[smEGCritWarn]
	for _, f := range l.counters() {
		*f.v = uint128(b[f.off:])
	}
	l.WarningTempTime = le.Uint32(b[smWarnTempTime:])
	l.CriticalTempTime = le.Uint32(b[smCritTempTime:])
	for i := range l.TempSensor {
		l.TempSensor[i] = le.Uint16(b[smTempSensor+2*i:])
	}
	l.TMT1TransCount = le.Uint32(b[smTMT1Count:])
	l.TMT2TransCount = le.Uint32(b[smTMT2Count:])
	l.TMT1TotalTime = le.Uint32(b[smTMT1Time:])
	l.TMT2TotalTime = le.Uint32(b[smTMT2Time:])
	return l, nil
}

type smartCounter struct {
	off int
	v   *uint64
}

// counters lists the 128-bit counters with their offsets.
func (l *SMARTLog) counters() [10]smartCounter {
	return [10]smartCounter{
		{smDataRead, &l.DataUnitsRead},
		{smDataWritten, &l.DataUnitsWritten},
		{smHostReads, &l.HostReads},
		{smHostWrites, &l.HostWrites},
		{smBusyTime, &l.CtrlBusyTime},
		{smPowerCycles, &l.PowerCycles},
		{smPowerOnHours, &l.PowerOnHours},
		{smUnsafeShut, &l.UnsafeShutdowns},
		{smMediaErrors, &l.MediaErrors},
		{smNumErrLog, &l.NumErrLogEntries},
	}
}
