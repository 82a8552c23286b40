package nvme

// Asynchronous events (NVMe base spec 2.0 §5.2, Figure 146 "Asynchronous
// Event Request – Completion Queue Entry Dword 0": type bits 2:0, info bits
// 15:8, log page identifier bits 23:16).

// Asynchronous event types.
const (
	AsyncEventTypeError  = 0
	AsyncEventTypeSMART  = 1
	AsyncEventTypeNotice = 2
	AsyncEventTypeIO     = 6 // I/O command set specific
	AsyncEventTypeVendor = 7
)

// Notice event information values (type AsyncEventTypeNotice).
const (
	AsyncEventNoticeNSChanged       = 0x00 // read LogChangedNSList
	AsyncEventNoticeFirmwareAct     = 0x01
	AsyncEventNoticeANAChange       = 0x03 // read LogANA
	AsyncEventNoticeDiscoveryChange = 0xF0 // read LogDiscovery
)

// Asynchronous Event Configuration feature (FeatAsyncEventConfig) CDW11
// bits (§5.27.1.11): bits 7:0 SMART critical warnings, then notices.
const (
	AECNSAttr          = 1 << 8
	AECFirmwareAct     = 1 << 9
	AECANAChange       = 1 << 11
	AECDiscoveryChange = 1 << 31
)

// MakeAsyncEventResult packs an Asynchronous Event Request completion DW0.
// Only the low 3 bits of typ are used.
func MakeAsyncEventResult(typ, info, lid uint8) uint32 {
	return uint32(typ&7) | uint32(info)<<8 | uint32(lid)<<16
}

// ParseAsyncEventResult unpacks an Asynchronous Event Request completion DW0.
func ParseAsyncEventResult(v uint32) (typ, info, lid uint8) {
	return uint8(v) & 7, uint8(v >> 8), uint8(v >> 16)
}
