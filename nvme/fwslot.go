package nvme

// Firmware Slot Information log page (NVMe base spec 2.0 §5.16.1.4,
// Figure 209; LID 03h): AFI at byte 0, FRS1..FRS7 at bytes 8, 16, ... 56
// (8-byte ASCII revisions), 512 bytes in all.

// FirmwareSlotLogSize is the size of the firmware slot log page.
const FirmwareSlotLogSize = 512

const (
	fwAFI = 0
	fwFRS = 8
)

// FirmwareSlotLog is the firmware slot information. AFI bits 2:0 are the
// active slot (1…7), bits 6:4 the slot activated at the next reset. An
// empty FRS string means no firmware in that slot (all-zero field);
// otherwise it is space padded to 8 bytes and truncated beyond.
type FirmwareSlotLog struct {
	AFI uint8
	FRS [7]string
}

// Marshal encodes l into b[:FirmwareSlotLogSize], zeroing reserved bytes.
// It returns ErrShort (b unchanged) when b is too short.
func (l *FirmwareSlotLog) Marshal(b []byte) error {
	if len(b) < FirmwareSlotLogSize {
		return ErrShort
	}
	b = b[:FirmwareSlotLogSize]
	clear(b)
	b[fwAFI] = l.AFI
	for i, r := range l.FRS {
		if r != "" {
			putSpacePadded(b[fwFRS+8*i:fwFRS+8*i+8], r)
		}
	}
	return nil
}

// ParseFirmwareSlotLog decodes a firmware slot log page.
func ParseFirmwareSlotLog(b []byte) (FirmwareSlotLog, error) {
	var l FirmwareSlotLog
	if len(b) < FirmwareSlotLogSize {
		return l, ErrShort
	}
	l.AFI = b[fwAFI]
	for i := range l.FRS {
		l.FRS[i] = trimPadded(b[fwFRS+8*i : fwFRS+8*i+8])
	}
	return l, nil
}
