package nvme

// Get Features / Set Features (NVMe base spec 2.0 §5.15 and §5.27; Figure
// 316 "Feature Identifiers"). CDW10: FID bits 7:0, SEL bits 10:8 (Get),
// SV bit 31 (Set). CDW11 and the CQE DW0 are feature specific.

// Feature identifiers.
const (
	FeatArbitration        = 0x01
	FeatPowerMgmt          = 0x02
	FeatLBARange           = 0x03
	FeatTempThreshold      = 0x04
	FeatErrorRecovery      = 0x05
	FeatVolatileWriteCache = 0x06 // CDW11 bit 0 WCE
	FeatNumQueues          = 0x07 // see NumQueuesValue
	FeatIRQCoalesce        = 0x08
	FeatIRQConfig          = 0x09
	FeatWriteAtomicity     = 0x0A
	FeatAsyncEventConfig   = 0x0B // CDW11: AEC* bits
	FeatAutoPowerState     = 0x0C
	FeatHostMemBuffer      = 0x0D
	FeatTimestamp          = 0x0E
	FeatKeepAliveTimer     = 0x0F // CDW11: KATO in ms
	FeatHostID             = 0x81 // CDW11 bit 0 EXHID; data: 16-byte host ID
	FeatResvNotifyMask     = 0x82
	FeatResvPersistence    = 0x83
)

// Get Features select values (CDW10 SEL).
const (
	FeatSelCurrent   = 0
	FeatSelDefault   = 1
	FeatSelSaved     = 2
	FeatSelSupported = 3 // capabilities, returned in DW0
)

// Feature field bits.
const (
	FeatSV       = 1 << 31 // Set Features CDW10: save across power cycles
	FeatVWCWCE   = 1 << 0  // Volatile Write Cache CDW11: write cache enable
	FeatHostIDEX = 1 << 0  // Host Identifier CDW11: 128-bit host ID
)

// FeaturesCmd is a view of a Get Features or Set Features command.
type FeaturesCmd struct{ *SQE }

// FID is the feature identifier (CDW10 bits 7:0).
func (c FeaturesCmd) FID() uint8 { return uint8(c.SQE.CDW10()) }

// SEL is the Get Features select field (CDW10 bits 10:8).
func (c FeaturesCmd) SEL() uint8 { return uint8(c.SQE.CDW10()>>8) & 7 }

// SV reports the Set Features save bit (CDW10 bit 31).
func (c FeaturesCmd) SV() bool { return c.SQE.CDW10()&FeatSV != 0 }

// SetGetFeatures fills a Get Features command for fid (SEL = current) with
// the feature-specific CDW11, zeroing all bytes except flags, CID and SGL1.
func (s *SQE) SetGetFeatures(fid uint8, cdw11 uint32) {
	s.begin(AdminGetFeatures)
	s.SetCDW(10, uint32(fid))
	s.SetCDW(11, cdw11)
}

// SetSetFeatures fills a Set Features command for fid (SV = 0) with the
// feature-specific CDW11, zeroing all bytes except flags, CID and SGL1.
func (s *SQE) SetSetFeatures(fid uint8, cdw11 uint32) {
	s.begin(AdminSetFeatures)
	s.SetCDW(10, uint32(fid))
	s.SetCDW(11, cdw11)
}

// NumQueuesValue packs I/O queue counts for the Number of Queues feature
// (§5.27.1.7): NSQR bits 15:0 and NCQR bits 31:16, both 0's based. nsqr
// and ncqr are 1-based counts; 0 is treated as 1 (the field cannot express
// zero queues). The same layout is the completion's DW0 (NSQA / NCQA).
func NumQueuesValue(nsqr, ncqr uint16) uint32 {
	return uint32(max(nsqr, 1)-1) | uint32(max(ncqr, 1)-1)<<16
}

// ParseNumQueues unpacks a Number of Queues CDW11 or completion DW0 into
// 1-based submission and completion queue counts. The 0's based value
// 65535 (not allowed by the spec) saturates at 65535.
func ParseNumQueues(v uint32) (nsqr, ncqr uint16) {
	inc := func(x uint16) uint16 {
		if x == 0xFFFF {
			return x
		}
		return x + 1
	}
	return inc(uint16(v)), inc(uint16(v >> 16))
}
