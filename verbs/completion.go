package verbs

import "strconv"

// WCStatus is ibv_wc_status; the values match libibverbs.
type WCStatus uint8

const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCBadRespErr     WCStatus = 7
	WCLocAccessErr   WCStatus = 8
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCFatalErr       WCStatus = 19
	WCRespTimeoutErr WCStatus = 20
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = map[WCStatus]string{
	WCSuccess:        "success",
	WCLocLenErr:      "local length error",
	WCLocQPOpErr:     "local QP operation error",
	WCLocProtErr:     "local protection error",
	WCWRFlushErr:     "WR flushed",
	WCBadRespErr:     "bad response",
	WCLocAccessErr:   "local access error",
	WCRemInvReqErr:   "remote invalid request",
	WCRemAccessErr:   "remote access error",
	WCRemOpErr:       "remote operation error",
	WCRetryExcErr:    "transport retry counter exceeded",
	WCRNRRetryExcErr: "RNR retry counter exceeded",
	WCFatalErr:       "fatal error",
	WCRespTimeoutErr: "response timeout",
	WCGeneralErr:     "general error",
}

func (s WCStatus) String() string {
	if n, ok := wcStatusNames[s]; ok {
		return n
	}
	return "wc status " + strconv.Itoa(int(s))
}

// WCOpcode is ibv_wc_opcode; the values match libibverbs.
type WCOpcode uint8

const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCLocalInv        WCOpcode = 6
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

func (o WCOpcode) String() string {
	switch o {
	case WCSend:
		return "SEND"
	case WCRDMAWrite:
		return "RDMA_WRITE"
	case WCRDMARead:
		return "RDMA_READ"
	case WCLocalInv:
		return "LOCAL_INV"
	case WCRecv:
		return "RECV"
	case WCRecvRDMAWithImm:
		return "RECV_RDMA_WITH_IMM"
	}
	return "wc opcode " + strconv.Itoa(int(o))
}

// WCFlags are ibv_wc_flags; the values match libibverbs.
type WCFlags uint8

const (
	WCWithImm WCFlags = 1 << 1 // IBV_WC_WITH_IMM
	WCWithInv WCFlags = 1 << 3 // IBV_WC_WITH_INV
)

// WorkCompletion is ibv_wc. For error completions only ID, Status, QPNum
// and VendorErr are meaningful.
type WorkCompletion struct {
	ID      uint64
	Status  WCStatus
	Opcode  WCOpcode
	Flags   WCFlags
	ByteLen uint32
	QPNum   uint32
	Imm     uint32
	// InvalidatedRKey is the rkey the peer invalidated (WCWithInv).
	InvalidatedRKey uint32
	VendorErr       uint32
}
