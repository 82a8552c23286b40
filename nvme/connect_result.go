package nvme

// Connect Invalid Parameters / Connect Invalid Host completions (NVMe-oF
// 1.1 §3.3, Figure 21) say what was wrong in DW0: bits 15:0 IPO (the byte
// offset of the invalid field) and bits 23:16 IATTR, whose bit 0 tells
// whether IPO is an offset in the Connect data (set) or in the SQE
// (clear).

// Offsets of the Connect data fields a controller may blame (Figure 20).
const (
	ConnectDataOffsetHostID  = connectDataHostIDOff
	ConnectDataOffsetCNTLID  = connectDataCNTLIDOff
	ConnectDataOffsetSubNQN  = connectDataSubNQNOff
	ConnectDataOffsetHostNQN = connectDataHostNQNOff
)

// ConnectInvalidParam is the decoded DW0 of a failed Connect.
type ConnectInvalidParam struct {
	// InData: Offset is within the Connect data (IATTR bit 0), else
	// within the submission queue entry.
	InData bool
	// Offset is IPO, the byte offset of the invalid field.
	Offset uint16
}

// ParseConnectInvalidParam decodes the DW0 of a Connect completion with
// status Connect Invalid Parameters or Connect Invalid Host.
func ParseConnectInvalidParam(dw0 uint32) ConnectInvalidParam {
	return ConnectInvalidParam{InData: dw0>>16&1 != 0, Offset: uint16(dw0)}
}

// DW0 encodes p as a completion's DW0 (the target side).
func (p ConnectInvalidParam) DW0() uint32 {
	v := uint32(p.Offset)
	if p.InData {
		v |= 1 << 16
	}
	return v
}
