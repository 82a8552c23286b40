package nvme

import "strconv"

// Status is the 15-bit CQE status field without the phase tag (NVMe base
// spec §4.6.1): SC bits 7:0, SCT bits 10:8, CRD bits 12:11, More bit 13,
// DNR bit 14. The zero value is success.
type Status uint16

// Status code types (SCT).
const (
	SCTGeneric         = 0x0
	SCTCommandSpecific = 0x1
	SCTMedia           = 0x2
	SCTPath            = 0x3
	SCTVendor          = 0x7
)

// Status flag bits.
const (
	StatusMore Status = 1 << 13
	StatusDNR  Status = 1 << 14
)

// MakeStatus builds a status from its type and code.
func MakeStatus(sct, sc uint8) Status { return Status(uint16(sct&7)<<8 | uint16(sc)) }

// SCT is the status code type.
func (s Status) SCT() uint8 { return uint8(s>>8) & 7 }

// SC is the status code.
func (s Status) SC() uint8 { return uint8(s) }

// CRD is the command retry delay selector.
func (s Status) CRD() uint8 { return uint8(s>>11) & 3 }

// DNR reports "do not retry".
func (s Status) DNR() bool { return s&StatusDNR != 0 }

// More reports that more status information is in the error log.
func (s Status) More() bool { return s&StatusMore != 0 }

// Code is the status without CRD/More/DNR, for comparing with constants.
func (s Status) Code() Status { return s & 0x7ff }

// OK reports success.
func (s Status) OK() bool { return s.Code() == 0 }

// WithDNR returns s with the DNR bit set.
func (s Status) WithDNR() Status { return s | StatusDNR }

// Generic command status (SCT 0, NVMe base spec Figure "Generic Command Status Values").
const (
	StatusSuccess                  Status = 0x00
	StatusInvalidOpcode            Status = 0x01
	StatusInvalidField             Status = 0x02
	StatusCIDConflict              Status = 0x03
	StatusDataTransferError        Status = 0x04
	StatusAbortedPowerLoss         Status = 0x05
	StatusInternalError            Status = 0x06
	StatusAbortRequested           Status = 0x07
	StatusAbortSQDeleted           Status = 0x08
	StatusInvalidNamespace         Status = 0x0B
	StatusCommandSequenceError     Status = 0x0C
	StatusInvalidSGLSegment        Status = 0x0D
	StatusInvalidSGLCount          Status = 0x0E
	StatusDataSGLLengthInvalid     Status = 0x0F
	StatusMetadataSGLLengthInvalid Status = 0x10
	StatusSGLTypeInvalid           Status = 0x11
	StatusSGLOffsetInvalid         Status = 0x16
	StatusHostIDInconsistentFormat Status = 0x18
	StatusKeepAliveExpired         Status = 0x19
	StatusKeepAliveInvalid         Status = 0x1A
	StatusNamespaceWriteProtected  Status = 0x20
	StatusTransientTransportError  Status = 0x22
	StatusLBAOutOfRange            Status = 0x80
	StatusCapacityExceeded         Status = 0x81
	StatusNamespaceNotReady        Status = 0x82
	StatusReservationConflict      Status = 0x83
)

// Command specific status (SCT 1).
const (
	StatusInvalidCQ               Status = 0x101
	StatusInvalidQID              Status = 0x102
	StatusInvalidQueueSize        Status = 0x103
	StatusAbortLimit              Status = 0x104
	StatusAsyncLimit              Status = 0x105
	StatusInvalidLogPage          Status = 0x109
	StatusFeatureNotSaveable      Status = 0x10D
	StatusFeatureNotChangeable    Status = 0x10E
	StatusFeatureNotNSSpecific    Status = 0x10F
	StatusConflictingAttributes   Status = 0x180 // NVM command set: Dataset Management etc.
	StatusInvalidPI               Status = 0x181
	StatusWriteToReadOnly         Status = 0x182
	StatusConnectIncompatibleFmt  Status = 0x180 // fabrics Connect (same code, different command)
	StatusConnectControllerBusy   Status = 0x181
	StatusConnectInvalidParam     Status = 0x182
	StatusConnectRestartDiscovery Status = 0x183
	StatusConnectInvalidHost      Status = 0x184
	StatusDiscoveryRestart        Status = 0x190
	StatusAuthRequired            Status = 0x191
)

// Media and data integrity errors (SCT 2).
const (
	StatusWriteFault      Status = 0x280
	StatusUnrecoveredRead Status = 0x281
	StatusAccessDenied    Status = 0x286
	StatusDeallocatedLBA  Status = 0x287
)

// Path related status (SCT 3).
const (
	StatusInternalPathError   Status = 0x300
	StatusANAPersistentLoss   Status = 0x301
	StatusANAInaccessible     Status = 0x302
	StatusANATransition       Status = 0x303
	StatusControllerPathError Status = 0x360
	StatusHostPathError       Status = 0x370
	StatusHostAborted         Status = 0x371
)

var statusNames = map[Status]string{
	StatusSuccess:                  "success",
	StatusInvalidOpcode:            "invalid command opcode",
	StatusInvalidField:             "invalid field in command",
	StatusCIDConflict:              "command ID conflict",
	StatusDataTransferError:        "data transfer error",
	StatusAbortedPowerLoss:         "commands aborted due to power loss",
	StatusInternalError:            "internal error",
	StatusAbortRequested:           "command abort requested",
	StatusAbortSQDeleted:           "command aborted due to SQ deletion",
	StatusInvalidNamespace:         "invalid namespace or format",
	StatusCommandSequenceError:     "command sequence error",
	StatusInvalidSGLSegment:        "invalid SGL segment descriptor",
	StatusInvalidSGLCount:          "invalid number of SGL descriptors",
	StatusDataSGLLengthInvalid:     "data SGL length invalid",
	StatusMetadataSGLLengthInvalid: "metadata SGL length invalid",
	StatusSGLTypeInvalid:           "SGL descriptor type invalid",
	StatusSGLOffsetInvalid:         "SGL offset invalid",
	StatusHostIDInconsistentFormat: "host identifier inconsistent format",
	StatusKeepAliveExpired:         "keep alive timer expired",
	StatusKeepAliveInvalid:         "keep alive timeout invalid",
	StatusNamespaceWriteProtected:  "namespace is write protected",
	StatusTransientTransportError:  "transient transport error",
	StatusLBAOutOfRange:            "LBA out of range",
	StatusCapacityExceeded:         "capacity exceeded",
	StatusNamespaceNotReady:        "namespace not ready",
	StatusReservationConflict:      "reservation conflict",
	StatusInvalidCQ:                "invalid completion queue",
	StatusInvalidQID:               "invalid queue identifier",
	StatusInvalidQueueSize:         "invalid queue size",
	StatusAbortLimit:               "abort command limit exceeded",
	StatusAsyncLimit:               "asynchronous event request limit exceeded",
	StatusInvalidLogPage:           "invalid log page",
	StatusFeatureNotSaveable:       "feature identifier not saveable",
	StatusFeatureNotChangeable:     "feature not changeable",
	StatusFeatureNotNSSpecific:     "feature not namespace specific",
	StatusConflictingAttributes:    "conflicting attributes / connect incompatible format",
	StatusInvalidPI:                "invalid protection information / controller busy",
	StatusWriteToReadOnly:          "write to read only range / connect invalid parameters",
	StatusConnectRestartDiscovery:  "connect restart discovery",
	StatusConnectInvalidHost:       "connect invalid host",
	StatusDiscoveryRestart:         "discovery restart",
	StatusAuthRequired:             "authentication required",
	StatusWriteFault:               "write fault",
	StatusUnrecoveredRead:          "unrecovered read error",
	StatusAccessDenied:             "access denied",
	StatusDeallocatedLBA:           "deallocated or unwritten logical block",
	StatusInternalPathError:        "internal path error",
	StatusANAPersistentLoss:        "asymmetric access persistent loss",
	StatusANAInaccessible:          "asymmetric access inaccessible",
	StatusANATransition:            "asymmetric access transition",
	StatusControllerPathError:      "controller pathing error",
	StatusHostPathError:            "host pathing error",
	StatusHostAborted:              "command aborted by host",
}

// String describes the status, e.g. "invalid field in command (sct 0x0 sc 0x02, DNR)".
func (s Status) String() string {
	name, ok := statusNames[s.Code()]
	if !ok {
		name = "unknown status"
	}
	out := name + " (sct 0x" + strconv.FormatUint(uint64(s.SCT()), 16) +
		" sc 0x" + hex2(s.SC())
	if s.More() {
		out += ", More"
	}
	if s.DNR() {
		out += ", DNR"
	}
	return out + ")"
}

func hex2(b uint8) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&0xf]})
}

// Error makes a non-success Status usable as a Go error (control path and
// initiator results). Success must not be returned as an error.
func (s Status) Error() string { return "nvme: " + s.String() }
