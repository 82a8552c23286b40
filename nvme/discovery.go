package nvme

import (
	"encoding/binary"
	"strings"
)

// Discovery log page (NVMe base spec 2.0 §5.16.1.23 / NVMe-oF 1.1 §5.3,
// Figures "Discovery Log Page" and "Discovery Log Page Entry"; LID 70h):
// a 1024-byte header (GENCTR at 0, NUMREC at 8, RECFMT at 16) followed by
// NUMREC 1024-byte entries.

// Discovery log sizes.
const (
	DiscoveryLogHeaderSize = 1024
	DiscoveryLogEntrySize  = 1024
	trSvcIDLen             = 32
	trAddrLen              = 256
	// TSASSize is the transport specific address subtype field size.
	TSASSize = 256
)

// Transport types (TRTYPE).
const (
	TrTypeRDMA = 1
	TrTypeFC   = 2
	TrTypeTCP  = 3
	TrTypeLoop = 254 // intra-host
)

// Address families (ADRFAM).
const (
	AdrFamIPv4 = 1
	AdrFamIPv6 = 2
	AdrFamIB   = 3
	AdrFamFC   = 4
	AdrFamLoop = 254
)

// Subsystem types (SUBTYPE).
const (
	SubTypeReferral         = 1 // another discovery subsystem
	SubTypeNVM              = 2
	SubTypeCurrentDiscovery = 3 // the discovery subsystem being read
)

// Transport requirements (TREQ): bits 1:0 secure channel, bit 2 SQ flow
// control disable supported.
const (
	TReqSecureNotSpecified = 0
	TReqSecureRequired     = 1
	TReqSecureNotRequired  = 2
	TReqDisableSQFlow      = 1 << 2
)

// Entry flags (EFLAGS).
const (
	EFlagsDupRetInfo = 1 << 0 // duplicate returned information
	EFlagsEPCSD      = 1 << 1 // explicit persistent connection supported
	EFlagsNCC        = 1 << 2 // no CDC connectivity
)

// RDMA transport specific address subtype values (NVMe-oF 1.1 Figure 50).
const (
	RDMAQPTypeConnected    = 1 // reliable connected
	RDMAQPTypeDatagram     = 2 // reliable datagram
	RDMAPrTypeNotSpecified = 1
	RDMAPrTypeIB           = 2
	RDMAPrTypeRoCE         = 3
	RDMAPrTypeRoCEv2       = 4
	RDMAPrTypeIWARP        = 5
	RDMACMSRDMACM          = 1 // sockets-style addressing via RDMA_CM
)

// Entry offsets.
const (
	dlTrType  = 0
	dlAdrFam  = 1
	dlSubType = 2
	dlTReq    = 3
	dlPortID  = 4
	dlCNTLID  = 6
	dlASQSZ   = 8
	dlEFlags  = 10
	dlTrSvcID = 32
	dlSubNQN  = 256
	dlTrAddr  = 512
	dlTSAS    = 768

	dlhGenCtr = 0
	dlhNumRec = 8
	dlhRecFmt = 16
)

// RDMATSAS builds the RDMA transport specific address subtype: RDMA_QPTYPE
// at byte 0, RDMA_PRTYPE at 1, RDMA_CMS at 2, RDMA_PKEY at 8 (little
// endian), everything else zero.
func RDMATSAS(qptype, prtype, cms uint8, pkey uint16) [TSASSize]byte {
	var t [TSASSize]byte
	t[0], t[1], t[2] = qptype, prtype, cms
	binary.LittleEndian.PutUint16(t[8:], pkey)
	return t
}

// ParseRDMATSAS is the inverse of RDMATSAS.
func ParseRDMATSAS(t [TSASSize]byte) (qptype, prtype, cms uint8, pkey uint16) {
	return t[0], t[1], t[2], binary.LittleEndian.Uint16(t[8:])
}

// DiscoveryLogHeader is the discovery log page header.
type DiscoveryLogHeader struct {
	GenCtr uint64 // generation counter, changes with the log
	NumRec uint64 // number of records (entries)
	RecFmt uint16 // 0
}

// DiscoveryLogEntry is one discovery log page entry. TrSvcID (at most 32
// bytes) and TrAddr (at most 256 bytes) are ASCII, space padded on the
// wire (decoders also accept NUL padding); SubNQN is NUL padded.
type DiscoveryLogEntry struct {
	TrType, AdrFam, SubType, TReq uint8
	PortID, CNTLID, ASQSZ, EFlags uint16
	TrSvcID, SubNQN, TrAddr       string
	TSAS                          [TSASSize]byte
}

// check validates the string fields: the addresses must fit and hold no
// NUL, the NQN must fit its field.
func (e *DiscoveryLogEntry) check() error {
	if len(e.TrSvcID) > trSvcIDLen || len(e.TrAddr) > trAddrLen ||
		strings.IndexByte(e.TrSvcID, 0) >= 0 || strings.IndexByte(e.TrAddr, 0) >= 0 {
		return ErrTooLong
	}
	var nqn [NQNSize]byte
	return putNQN(nqn[:], e.SubNQN)
}

// Marshal encodes e into b[:DiscoveryLogEntrySize], zeroing reserved bytes.
// It returns ErrShort, ErrTooLong (TrSvcID/TrAddr, or either holds a NUL)
// or ErrBadNQN with b unchanged.
func (e *DiscoveryLogEntry) Marshal(b []byte) error {
	if len(b) < DiscoveryLogEntrySize {
		return ErrShort
	}
	if err := e.check(); err != nil {
		return err
	}
	b = b[:DiscoveryLogEntrySize]
	clear(b)
	le := binary.LittleEndian
	b[dlTrType] = e.TrType
	b[dlAdrFam] = e.AdrFam
	b[dlSubType] = e.SubType
	b[dlTReq] = e.TReq
	le.PutUint16(b[dlPortID:], e.PortID)
	le.PutUint16(b[dlCNTLID:], e.CNTLID)
	le.PutUint16(b[dlASQSZ:], e.ASQSZ)
	le.PutUint16(b[dlEFlags:], e.EFlags)
	putPadded(b[dlTrSvcID:dlTrSvcID+trSvcIDLen], e.TrSvcID) // checked above
	_ = putNQN(b[dlSubNQN:dlSubNQN+NQNSize], e.SubNQN)      // checked above
	putPadded(b[dlTrAddr:dlTrAddr+trAddrLen], e.TrAddr)     // checked above
	copy(b[dlTSAS:], e.TSAS[:])
	return nil
}

// ParseDiscoveryLogEntry decodes one entry from b[:DiscoveryLogEntrySize].
// It returns ErrBadNQN when SUBNQN has no NUL terminator.
func ParseDiscoveryLogEntry(b []byte) (DiscoveryLogEntry, error) {
	var e DiscoveryLogEntry
	if len(b) < DiscoveryLogEntrySize {
		return e, ErrShort
	}
	le := binary.LittleEndian
	e.TrType = b[dlTrType]
	e.AdrFam = b[dlAdrFam]
	e.SubType = b[dlSubType]
	e.TReq = b[dlTReq]
	e.PortID = le.Uint16(b[dlPortID:])
	e.CNTLID = le.Uint16(b[dlCNTLID:])
	e.ASQSZ = le.Uint16(b[dlASQSZ:])
	e.EFlags = le.Uint16(b[dlEFlags:])
	e.TrSvcID = trimPadded(b[dlTrSvcID : dlTrSvcID+trSvcIDLen])
	e.TrAddr = trimPadded(b[dlTrAddr : dlTrAddr+trAddrLen])
	copy(e.TSAS[:], b[dlTSAS:])
	var ok bool
	if e.SubNQN, ok = cString(b[dlSubNQN : dlSubNQN+NQNSize]); !ok {
		return e, ErrBadNQN
	}
	return e, nil
}

// DiscoveryLogSize is the size of a discovery log with n entries,
// 1024 + 1024n (n < 0 counts as 0).
func DiscoveryLogSize(n int) int {
	return DiscoveryLogHeaderSize + DiscoveryLogEntrySize*max(n, 0)
}

// MarshalDiscoveryLog writes a complete discovery log (header with GENCTR
// genctr, NUMREC len(e), RECFMT 0, then the entries) into
// b[:DiscoveryLogSize(len(e))]. Bytes of b beyond that are left alone: a
// controller serving a Get Log Page with an offset copies the window it
// needs. On error (ErrShort, ErrTooLong, ErrBadNQN) b is unchanged.
func MarshalDiscoveryLog(b []byte, genctr uint64, e []DiscoveryLogEntry) error {
	size := DiscoveryLogSize(len(e))
	if len(b) < size {
		return ErrShort
	}
	for i := range e {
		if err := e[i].check(); err != nil {
			return err
		}
	}
	clear(b[:DiscoveryLogHeaderSize])
	binary.LittleEndian.PutUint64(b[dlhGenCtr:], genctr)
	binary.LittleEndian.PutUint64(b[dlhNumRec:], uint64(len(e)))
	for i := range e {
		o := DiscoveryLogHeaderSize + i*DiscoveryLogEntrySize
		if err := e[i].Marshal(b[o : o+DiscoveryLogEntrySize]); err != nil {
			return err // not reached: validated above
		}
	}
	return nil
}

// ParseDiscoveryLog decodes a discovery log page read from offset 0. It
// returns the header and the entries wholly present in b, at most NUMREC:
// a header-only read (1024 bytes) yields no entries, and a caller that
// gets fewer than hdr.NumRec entries re-reads with a larger buffer (and
// re-checks GenCtr, which changes when the log does). It returns ErrShort
// when b has no complete header, ErrBadRecfmt for RECFMT ≠ 0 and ErrBadNQN
// for an entry without a NUL-terminated SUBNQN. It does not retain b.
func ParseDiscoveryLog(b []byte) (DiscoveryLogHeader, []DiscoveryLogEntry, error) {
	var h DiscoveryLogHeader
	if len(b) < DiscoveryLogHeaderSize {
		return h, nil, ErrShort
	}
	h.GenCtr = binary.LittleEndian.Uint64(b[dlhGenCtr:])
	h.NumRec = binary.LittleEndian.Uint64(b[dlhNumRec:])
	h.RecFmt = binary.LittleEndian.Uint16(b[dlhRecFmt:])
	if h.RecFmt != 0 {
		return h, nil, ErrBadRecfmt
	}
	n := uint64((len(b) - DiscoveryLogHeaderSize) / DiscoveryLogEntrySize)
	n = min(n, h.NumRec)
	if n == 0 {
		return h, nil, nil
	}
	out := make([]DiscoveryLogEntry, n)
	for i := range out {
		o := DiscoveryLogHeaderSize + i*DiscoveryLogEntrySize
		var err error
		if out[i], err = ParseDiscoveryLogEntry(b[o:]); err != nil {
			return h, out[:i], err
		}
	}
	return h, out, nil
}
