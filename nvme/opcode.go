package nvme

// Admin command opcodes (NVMe base spec §5).
const (
	AdminDeleteIOSQ       = 0x00
	AdminCreateIOSQ       = 0x01
	AdminGetLogPage       = 0x02
	AdminDeleteIOCQ       = 0x04
	AdminCreateIOCQ       = 0x05
	AdminIdentify         = 0x06
	AdminAbort            = 0x08
	AdminSetFeatures      = 0x09
	AdminGetFeatures      = 0x0A
	AdminAsyncEvent       = 0x0C
	AdminNSManagement     = 0x0D
	AdminFirmwareCommit   = 0x10
	AdminFirmwareDownload = 0x11
	AdminKeepAlive        = 0x18
	AdminDirectiveSend    = 0x19
	AdminDirectiveRecv    = 0x1A
	AdminFormatNVM        = 0x80
	AdminSecuritySend     = 0x81
	AdminSecurityRecv     = 0x82
)

// OpFabrics is the fabrics command opcode, on admin and I/O queues.
const OpFabrics = 0x7F

// Fabrics command types (NVMe-oF spec §3.3, FCTYPE).
const (
	FabricsPropertySet = 0x00
	FabricsConnect     = 0x01
	FabricsPropertyGet = 0x04
	FabricsAuthSend    = 0x05
	FabricsAuthRecv    = 0x06
	FabricsDisconnect  = 0x08
)

// NVM command set I/O opcodes (NVM command set spec §3).
const (
	IOFlush          = 0x00
	IOWrite          = 0x01
	IORead           = 0x02
	IOWriteUncorrect = 0x04
	IOCompare        = 0x05
	IOWriteZeroes    = 0x08
	IODatasetMgmt    = 0x09
	IOVerify         = 0x0C
	IOReservationReg = 0x0D
	IOReservationRep = 0x0E
	IOReservationAcq = 0x11
	IOReservationRel = 0x15
)

// DataDirection is the transfer direction of a command, from opcode bits
// 1:0 (NVMe base spec §5: 01b host→controller, 10b controller→host).
type DataDirection uint8

const (
	DirNone          DataDirection = 0
	DirHostToCtrl    DataDirection = 1
	DirCtrlToHost    DataDirection = 2
	DirBidirectional DataDirection = 3
)

// OpcodeDirection returns the data direction encoded in a (non-fabrics)
// opcode. Fabrics commands encode direction in FCTYPE bits 1:0 the same way.
func OpcodeDirection(op uint8) DataDirection { return DataDirection(op & 3) }
