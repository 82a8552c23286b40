package nvme

import "encoding/binary"

// Get Log Page command (NVMe base spec 2.0 §5.16, Figures 197-201):
// CDW10 LID bits 7:0, LSP bits 14:8, RAE bit 15, NUMDL bits 31:16;
// CDW11 NUMDU bits 15:0, LSI bits 31:16; CDW12/13 LPOL/LPOU (byte offset);
// CDW14 UUID index bits 6:0, OT bit 23, CSI bits 31:24.

// Log page identifiers (Figure 202).
const (
	LogSupportedPages  = 0x00
	LogError           = 0x01 // ErrorLogEntrySize-byte entries
	LogSMART           = 0x02 // SMARTLogSize bytes
	LogFirmwareSlot    = 0x03 // FirmwareSlotLogSize bytes
	LogChangedNSList   = 0x04 // ChangedNSListSize bytes
	LogCommandsEffects = 0x05 // CommandsEffectsLogSize bytes
	LogANA             = 0x0C
	LogDiscovery       = 0x70
)

// Log specific field values.
const (
	// ANALSPRGO is the ANA log LSP bit 0 "Return Groups Only": descriptors
	// carry no NSID lists.
	ANALSPRGO = 1 << 0
)

// GetLogPageCmd is a view of a Get Log Page command.
type GetLogPageCmd struct{ *SQE }

// LID is the log page identifier.
func (c GetLogPageCmd) LID() uint8 { return uint8(c.SQE.CDW10()) }

// LSP is the log specific field (7 bits).
func (c GetLogPageCmd) LSP() uint8 { return uint8(c.SQE.CDW10()>>8) & 0x7F }

// RAE reports Retain Asynchronous Event: reading the page does not clear
// a pending asynchronous event for it.
func (c GetLogPageCmd) RAE() bool { return c.SQE.CDW10()&(1<<15) != 0 }

// NUMD is the number of dwords to return, 1-based (NUMDU:NUMDL + 1, up to
// 2^32, hence uint64).
func (c GetLogPageCmd) NUMD() uint64 {
	return uint64(c.SQE.CDW10()>>16|c.SQE.CDW11()<<16) + 1
}

// NumBytes is the transfer length in bytes, NUMD()*4.
func (c GetLogPageCmd) NumBytes() uint64 { return c.NUMD() * 4 }

// LSI is the log specific identifier (CDW11 bits 31:16).
func (c GetLogPageCmd) LSI() uint16 { return uint16(c.SQE.CDW11() >> 16) }

// Offset is the byte offset into the log page (LPOU:LPOL). Must be a
// multiple of 4; the controller checks.
func (c GetLogPageCmd) Offset() uint64 { return binary.LittleEndian.Uint64(c.SQE[48:]) }

// CSI is the command set identifier (CDW14 bits 31:24).
func (c GetLogPageCmd) CSI() uint8 { return uint8(c.SQE.CDW14() >> 24) }

// SetLSP sets the log specific field (7 bits).
func (c GetLogPageCmd) SetLSP(lsp uint8) {
	c.SQE.SetCDW(10, c.SQE.CDW10()&^(0x7F<<8)|uint32(lsp&0x7F)<<8)
}

// SetRAE sets or clears Retain Asynchronous Event.
func (c GetLogPageCmd) SetRAE(on bool) {
	v := c.SQE.CDW10() &^ (1 << 15)
	if on {
		v |= 1 << 15
	}
	c.SQE.SetCDW(10, v)
}

// SetGetLogPage fills a Get Log Page command for log lid of namespace nsid
// (FFFFFFFFh or 0 for controller-wide logs), reading numBytes from byte
// offset (dword aligned). numBytes is rounded up to whole dwords, minimum
// one dword. LSP and RAE start at zero (see SetLSP, SetRAE). All bytes
// except flags, CID and SGL1 are zeroed first.
func (s *SQE) SetGetLogPage(lid uint8, nsid uint32, numBytes uint32, offset uint64) {
	s.begin(AdminGetLogPage)
	s.SetNSID(nsid)
	numd := (uint64(numBytes) + 3) / 4
	if numd == 0 {
		numd = 1
	}
	numd-- // 0's based, at most 2^30-1
	s.SetCDW(10, uint32(lid)|uint32(numd&0xFFFF)<<16)
	s.SetCDW(11, uint32(numd>>16))
	binary.LittleEndian.PutUint64(s[48:], offset)
}
