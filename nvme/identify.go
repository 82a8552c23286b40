package nvme

import "encoding/binary"

// Identify command (NVMe base spec 2.0 §5.17, Figure 273 "Identify – Command
// Dword 10", Figure 274 "CNS values").

// IdentifySize is the size of every Identify data structure.
const IdentifySize = 4096

// CNS values.
const (
	CNSNamespace         = 0x00 // Identify Namespace (NVM command set), Figure 245 NVM spec
	CNSController        = 0x01 // Identify Controller, Figure 275
	CNSActiveNSList      = 0x02 // active NSIDs greater than CDW1.NSID
	CNSNSDescList        = 0x03 // namespace identification descriptor list
	CNSCSNamespace       = 0x05 // I/O command set specific Identify Namespace (CSI)
	CNSCSController      = 0x06 // I/O command set specific Identify Controller (CSI)
	CNSCSActiveNSList    = 0x07 // active NS list for an I/O command set (CSI)
	CNSCommandSetProfile = 0x1C // I/O command set data structure
)

// IdentifyCmd is a view of an Identify command.
type IdentifyCmd struct{ *SQE }

// CNS is the Controller or Namespace Structure selector (CDW10 bits 7:0).
func (c IdentifyCmd) CNS() uint8 { return uint8(c.SQE.CDW10()) }

// CNTID is the controller identifier (CDW10 bits 31:16).
func (c IdentifyCmd) CNTID() uint16 { return uint16(c.SQE.CDW10() >> 16) }

// CSI is the command set identifier (CDW11 bits 31:24; 0 = NVM).
func (c IdentifyCmd) CSI() uint8 { return uint8(c.SQE.CDW11() >> 24) }

// SetIdentify fills an Identify command for structure cns about namespace
// nsid (0 when the CNS is not namespace specific), zeroing all bytes except
// flags, CID and SGL1. The data is IdentifySize bytes.
func (s *SQE) SetIdentify(cns uint8, nsid uint32) {
	s.begin(AdminIdentify)
	s.SetNSID(nsid)
	s.SetCDW(10, uint32(cns))
}

// Controller types (Identify Controller CNTRLTYPE, byte 111).
const (
	CntrlTypeIO        = 1
	CntrlTypeDiscovery = 2
	CntrlTypeAdmin     = 3
)

// CMIC bits (byte 76).
const (
	CMICMultiPort = 1 << 0
	CMICMultiCtrl = 1 << 1
	CMICSRIOV     = 1 << 2
	CMICANA       = 1 << 3 // ANA reporting supported
)

// OAES bits (bytes 95:92): optional asynchronous events supported. The same
// bit positions enable the events in the Asynchronous Event Configuration
// feature (AEC* constants).
const (
	OAESNSAttr          = 1 << 8
	OAESFirmwareAct     = 1 << 9
	OAESANAChange       = 1 << 11
	OAESDiscoveryChange = 1 << 31
)

// CTRATT bits (bytes 99:96).
const (
	CTRATTHostID128 = 1 << 0 // 128-bit host identifier (required over fabrics)
)

// LPA bits (byte 261): log page attributes.
const (
	LPASMARTPerNS      = 1 << 0
	LPACommandsEffects = 1 << 1
	LPAExtendedData    = 1 << 2 // NUMDU / offset fields of Get Log Page supported
)

// ANACAP bits (byte 343).
const (
	ANACAPOptimized      = 1 << 0
	ANACAPNonOptimized   = 1 << 1
	ANACAPInaccessible   = 1 << 2
	ANACAPPersistentLoss = 1 << 3
	ANACAPChange         = 1 << 4
	ANACAPGrpIDStatic    = 1 << 6 // ANAGRPID does not change while attached
	ANACAPGrpIDNonZero   = 1 << 7 // non-zero ANAGRPID in Namespace Management
)

// ONCS bits (bytes 521:520): optional NVM commands supported.
const (
	ONCSCompare      = 1 << 0
	ONCSWriteUncorr  = 1 << 1
	ONCSDSM          = 1 << 2
	ONCSWriteZeroes  = 1 << 3
	ONCSSaveSelect   = 1 << 4
	ONCSReservations = 1 << 5
	ONCSTimestamp    = 1 << 6
	ONCSVerify       = 1 << 7
)

// VWC bits (byte 525).
const (
	VWCPresent = 1 << 0
	// VWCFlushAllSupported: Flush with NSID FFFFFFFFh is supported (bits
	// 2:1 = 11b).
	VWCFlushAllSupported = 3 << 1
	// VWCFlushAllUnsupported: bits 2:1 = 10b.
	VWCFlushAllUnsupported = 2 << 1
)

// SGLS bits (bytes 539:536).
const (
	SGLSSupported = 1       // bits 1:0 = 01b: SGLs supported, no alignment
	SGLSKeyed     = 1 << 2  // keyed SGL data block (required by Linux nvme-rdma)
	SGLSBitBucket = 1 << 16 // bit bucket descriptor
	SGLSOffset    = 1 << 20 // address field may be an offset (in-capsule data)
)

// FCATT bits (byte 1802): fabrics controller attributes.
const (
	FCATTStaticModel = 1 << 0 // static controller model (0 = dynamic)
)

// OFCS bits (bytes 1805:1804): optional fabrics commands supported.
const (
	OFCSDisconnect = 1 << 0
)

// Identify Controller field offsets (NVMe base spec 2.0 Figure 275;
// NVMe-oF 1.1 Figure 28 for bytes 2047:1792).
const (
	idcVID       = 0
	idcSSVID     = 2
	idcSN        = 4  // 20 bytes
	idcMN        = 24 // 40 bytes
	idcFR        = 64 // 8 bytes
	idcRAB       = 72
	idcIEEE      = 73
	idcCMIC      = 76
	idcMDTS      = 77
	idcCNTLID    = 78
	idcVER       = 80
	idcRTD3R     = 84
	idcRTD3E     = 88
	idcOAES      = 92
	idcCTRATT    = 96
	idcCNTRLTYPE = 111
	idcFGUID     = 112
	idcCRDT      = 128 // CRDT1..3, 2 bytes each
	idcOACS      = 256
	idcACL       = 258
	idcAERL      = 259
	idcFRMW      = 260
	idcLPA       = 261
	idcELPE      = 262
	idcNPSS      = 263
	idcWCTEMP    = 266
	idcCCTEMP    = 268
	idcKAS       = 320
	idcANATT     = 342
	idcANACAP    = 343
	idcANAGRPMAX = 344
	idcNANAGRPID = 348
	idcPELS      = 352
	idcSQES      = 512
	idcCQES      = 513
	idcMAXCMD    = 514
	idcNN        = 516
	idcONCS      = 520
	idcFUSES     = 522
	idcFNA       = 524
	idcVWC       = 525
	idcAWUN      = 526
	idcAWUPF     = 528
	idcNVSCC     = 530
	idcNWPC      = 531
	idcACWU      = 532
	idcSGLS      = 536
	idcMNAN      = 540
	idcSUBNQN    = 768 // 256 bytes
	idcIOCCSZ    = 1792
	idcIORCSZ    = 1796
	idcICDOFF    = 1800
	idcFCATT     = 1802
	idcMSDBD     = 1803
	idcOFCS      = 1804

	snLen = 20
	mnLen = 40
	frLen = 8
)

// IdentifyController is the decoded Identify Controller data structure
// (CNS 01h). Field names follow the spec; sizes in comments where they are
// not obvious. SN, MN and FR are ASCII, space padded on the wire (trailing
// spaces are removed on parse, the fields truncated on marshal).
type IdentifyController struct {
	VID, SSVID uint16
	SN, MN, FR string // 20, 40, 8 bytes
	RAB        uint8  // recommended arbitration burst
	IEEE       [3]byte
	CMIC       uint8
	MDTS       uint8 // maximum data transfer size, 2^MDTS min pages; 0 = no limit
	CNTLID     uint16
	VER        uint32
	RTD3R      uint32
	RTD3E      uint32
	OAES       uint32
	CTRATT     uint32
	CNTRLTYPE  uint8
	FGUID      [16]byte
	CRDT       [3]uint16 // command retry delay times 1-3, 100 ms units
	OACS       uint16
	ACL        uint8 // abort command limit, 0's based
	AERL       uint8 // async event request limit, 0's based
	FRMW       uint8
	LPA        uint8
	ELPE       uint8 // error log page entries, 0's based
	NPSS       uint8 // number of power states, 0's based
	WCTEMP     uint16
	CCTEMP     uint16
	KAS        uint16 // keep alive granularity, 100 ms units
	ANATT      uint8  // ANA transition time, seconds
	ANACAP     uint8
	ANAGRPMAX  uint32
	NANAGRPID  uint32
	PELS       uint32
	SQES, CQES uint8 // entry sizes: bits 3:0 required, 7:4 maximum (log2)
	MAXCMD     uint16
	NN         uint32
	ONCS       uint16
	FUSES      uint16
	FNA        uint8
	VWC        uint8
	AWUN       uint16
	AWUPF      uint16
	NVSCC      uint8
	NWPC       uint8
	ACWU       uint16
	SGLS       uint32
	MNAN       uint32
	SubNQN     string // NUL padded, at most MaxNQNLength bytes
	IOCCSZ     uint32 // I/O queue command capsule size, 16-byte units (≥ 4)
	IORCSZ     uint32 // I/O queue response capsule size, 16-byte units (≥ 1)
	ICDOFF     uint16 // in-capsule data offset, 16-byte units
	FCATT      uint8
	MSDBD      uint8 // maximum SGL data block descriptors (0 = no limit)
	OFCS       uint16
}

// Marshal encodes c into b[:IdentifySize], zeroing every byte it does not
// set (reserved bytes, power state descriptors, vendor area). SN, MN and FR
// are truncated and space padded. It returns ErrShort when b is too short
// and ErrBadNQN when SubNQN does not fit; b is then unchanged.
func (c *IdentifyController) Marshal(b []byte) error {
	if len(b) < IdentifySize {
		return ErrShort
	}
	var nqn [NQNSize]byte
	if err := putNQN(nqn[:], c.SubNQN); err != nil {
		return err
	}
	b = b[:IdentifySize]
	clear(b)
	le := binary.LittleEndian
	le.PutUint16(b[idcVID:], c.VID)
	le.PutUint16(b[idcSSVID:], c.SSVID)
	putSpacePadded(b[idcSN:idcSN+snLen], c.SN)
	putSpacePadded(b[idcMN:idcMN+mnLen], c.MN)
	putSpacePadded(b[idcFR:idcFR+frLen], c.FR)
	b[idcRAB] = c.RAB
	copy(b[idcIEEE:], c.IEEE[:])
	b[idcCMIC] = c.CMIC
	b[idcMDTS] = c.MDTS
	le.PutUint16(b[idcCNTLID:], c.CNTLID)
	le.PutUint32(b[idcVER:], c.VER)
	le.PutUint32(b[idcRTD3R:], c.RTD3R)
	le.PutUint32(b[idcRTD3E:], c.RTD3E)
	le.PutUint32(b[idcOAES:], c.OAES)
	le.PutUint32(b[idcCTRATT:], c.CTRATT)
	b[idcCNTRLTYPE] = c.CNTRLTYPE
	copy(b[idcFGUID:], c.FGUID[:])
	for i, v := range c.CRDT {
		le.PutUint16(b[idcCRDT+2*i:], v)
	}
	le.PutUint16(b[idcOACS:], c.OACS)
	b[idcACL] = c.ACL
	b[idcAERL] = c.AERL
	b[idcFRMW] = c.FRMW
	b[idcLPA] = c.LPA
	b[idcELPE] = c.ELPE
	b[idcNPSS] = c.NPSS
	le.PutUint16(b[idcWCTEMP:], c.WCTEMP)
	le.PutUint16(b[idcCCTEMP:], c.CCTEMP)
	le.PutUint16(b[idcKAS:], c.KAS)
	b[idcANATT] = c.ANATT
	b[idcANACAP] = c.ANACAP
	le.PutUint32(b[idcANAGRPMAX:], c.ANAGRPMAX)
	le.PutUint32(b[idcNANAGRPID:], c.NANAGRPID)
	le.PutUint32(b[idcPELS:], c.PELS)
	b[idcSQES] = c.SQES
	b[idcCQES] = c.CQES
	le.PutUint16(b[idcMAXCMD:], c.MAXCMD)
	le.PutUint32(b[idcNN:], c.NN)
	le.PutUint16(b[idcONCS:], c.ONCS)
	le.PutUint16(b[idcFUSES:], c.FUSES)
	b[idcFNA] = c.FNA
	b[idcVWC] = c.VWC
	le.PutUint16(b[idcAWUN:], c.AWUN)
	le.PutUint16(b[idcAWUPF:], c.AWUPF)
	b[idcNVSCC] = c.NVSCC
	b[idcNWPC] = c.NWPC
	le.PutUint16(b[idcACWU:], c.ACWU)
	le.PutUint32(b[idcSGLS:], c.SGLS)
	le.PutUint32(b[idcMNAN:], c.MNAN)
	copy(b[idcSUBNQN:], nqn[:])
	le.PutUint32(b[idcIOCCSZ:], c.IOCCSZ)
	le.PutUint32(b[idcIORCSZ:], c.IORCSZ)
	le.PutUint16(b[idcICDOFF:], c.ICDOFF)
	b[idcFCATT] = c.FCATT
	b[idcMSDBD] = c.MSDBD
	le.PutUint16(b[idcOFCS:], c.OFCS)
	return nil
}

// ParseIdentifyController decodes an Identify Controller data structure.
// It returns ErrShort when len(b) < IdentifySize and ErrBadNQN when SUBNQN
// has no NUL terminator. It does not retain b.
func ParseIdentifyController(b []byte) (IdentifyController, error) {
	var c IdentifyController
	if len(b) < IdentifySize {
		return c, ErrShort
	}
	le := binary.LittleEndian
	c.VID = le.Uint16(b[idcVID:])
	c.SSVID = le.Uint16(b[idcSSVID:])
	c.SN = trimPadded(b[idcSN : idcSN+snLen])
	c.MN = trimPadded(b[idcMN : idcMN+mnLen])
	c.FR = trimPadded(b[idcFR : idcFR+frLen])
	c.RAB = b[idcRAB]
	copy(c.IEEE[:], b[idcIEEE:])
	c.CMIC = b[idcCMIC]
	c.MDTS = b[idcMDTS]
	c.CNTLID = le.Uint16(b[idcCNTLID:])
	c.VER = le.Uint32(b[idcVER:])
	c.RTD3R = le.Uint32(b[idcRTD3R:])
	c.RTD3E = le.Uint32(b[idcRTD3E:])
	c.OAES = le.Uint32(b[idcOAES:])
	c.CTRATT = le.Uint32(b[idcCTRATT:])
	c.CNTRLTYPE = b[idcCNTRLTYPE]
	copy(c.FGUID[:], b[idcFGUID:])
	for i := range c.CRDT {
		c.CRDT[i] = le.Uint16(b[idcCRDT+2*i:])
	}
	c.OACS = le.Uint16(b[idcOACS:])
	c.ACL = b[idcACL]
	c.AERL = b[idcAERL]
	c.FRMW = b[idcFRMW]
	c.LPA = b[idcLPA]
	c.ELPE = b[idcELPE]
	c.NPSS = b[idcNPSS]
	c.WCTEMP = le.Uint16(b[idcWCTEMP:])
	c.CCTEMP = le.Uint16(b[idcCCTEMP:])
	c.KAS = le.Uint16(b[idcKAS:])
	c.ANATT = b[idcANATT]
	c.ANACAP = b[idcANACAP]
	c.ANAGRPMAX = le.Uint32(b[idcANAGRPMAX:])
	c.NANAGRPID = le.Uint32(b[idcNANAGRPID:])
	c.PELS = le.Uint32(b[idcPELS:])
	c.SQES = b[idcSQES]
	c.CQES = b[idcCQES]
	c.MAXCMD = le.Uint16(b[idcMAXCMD:])
	c.NN = le.Uint32(b[idcNN:])
	c.ONCS = le.Uint16(b[idcONCS:])
	c.FUSES = le.Uint16(b[idcFUSES:])
	c.FNA = b[idcFNA]
	c.VWC = b[idcVWC]
	c.AWUN = le.Uint16(b[idcAWUN:])
	c.AWUPF = le.Uint16(b[idcAWUPF:])
	c.NVSCC = b[idcNVSCC]
	c.NWPC = b[idcNWPC]
	c.ACWU = le.Uint16(b[idcACWU:])
	c.SGLS = le.Uint32(b[idcSGLS:])
	c.MNAN = le.Uint32(b[idcMNAN:])
	c.IOCCSZ = le.Uint32(b[idcIOCCSZ:])
	c.IORCSZ = le.Uint32(b[idcIORCSZ:])
	c.ICDOFF = le.Uint16(b[idcICDOFF:])
	c.FCATT = b[idcFCATT]
	c.MSDBD = b[idcMSDBD]
	c.OFCS = le.Uint16(b[idcOFCS:])
	var ok bool
	if c.SubNQN, ok = cString(b[idcSUBNQN : idcSUBNQN+NQNSize]); !ok {
		return c, ErrBadNQN
	}
	return c, nil
}
