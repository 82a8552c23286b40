package nvme

// Controller register fields (NVMe base spec §3.1).

// CAP fields.
const (
	CAPMQESMask    = 0xFFFF  // bits 15:0 maximum queue entries supported, 0's based
	CAPCQR         = 1 << 16 // contiguous queues required
	CAPTOShift     = 24      // bits 31:24 timeout in 500 ms units
	CAPCSSNVM      = 1 << 37 // command sets supported: NVM
	CAPMPSMINShift = 48
	CAPMPSMAXShift = 52
)

// MakeCAP builds a CAP value from MQES (0's based), timeout in 500 ms units
// and page size exponents (2^(12+mps)).
func MakeCAP(mqes uint16, to uint8, mpsmin, mpsmax uint8) uint64 {
	return uint64(mqes) | CAPCQR | uint64(to)<<CAPTOShift | CAPCSSNVM |
		uint64(mpsmin&0xf)<<CAPMPSMINShift | uint64(mpsmax&0xf)<<CAPMPSMAXShift
}

// VS values.
const (
	VS13 = 0x00010300
	VS14 = 0x00010400
	VS20 = 0x00020000
)

// CC fields.
const (
	CCEN          = 1 << 0
	CCSHNShift    = 14
	CCSHNMask     = 3 << CCSHNShift
	CCSHNNormal   = 1 << CCSHNShift
	CCSHNAbrupt   = 2 << CCSHNShift
	CCIOSQESShift = 16
	CCIOCQESShift = 20
)

// CSTS fields.
const (
	CSTSRDY          = 1 << 0
	CSTSCFS          = 1 << 1
	CSTSSHSTShift    = 2
	CSTSSHSTMask     = 3 << CSTSSHSTShift
	CSTSSHSTOccuring = 1 << CSTSSHSTShift
	CSTSSHSTComplete = 2 << CSTSSHSTShift
)
