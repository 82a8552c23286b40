package soft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// The soft NICs of a QP pair speak a framed binary protocol over one byte
// stream (a TCP connection or an in-process pipe). Every frame starts with a
// fixed 32-byte little-endian header, optionally followed by a payload:
//
//	off size field
//	0   1    type      (frame* constants)
//	1   1    flags     (flag* constants, per type)
//	2   1    syndrome  (NAK only: syn* constants)
//	3   1    reserved, 0
//	4   4    msn       message sequence number of the request it carries or answers
//	8   4    length    payload bytes following the header
//	12  4    rkey      WRITE, READ request
//	16  8    raddr     WRITE, READ request
//	24  4    imm       immediate data (SEND/WRITE with imm), rkey to invalidate
//	                   (SEND with inv), or requested length (READ request)
//	28  4    reserved, 0
//
// Fields a frame type does not use must be zero; a header that breaks any rule
// is a protocol error and kills the connection.
const headerLen = 32

// Frame types.
const (
	frameReq      uint8 = 1  // CM connect request (payload: cmPayload)
	frameRep      uint8 = 2  // CM connect reply (payload: cmPayload)
	frameRTU      uint8 = 3  // CM ready to use
	frameRej      uint8 = 4  // CM reject (payload: private data)
	frameSend     uint8 = 5  // SEND request (payload: message)
	frameWrite    uint8 = 6  // RDMA WRITE request (payload: data)
	frameReadReq  uint8 = 7  // RDMA READ request
	frameReadResp uint8 = 8  // RDMA READ response (payload: data)
	frameAck      uint8 = 9  // cumulative acknowledgement up to msn
	frameNak      uint8 = 10 // negative acknowledgement of msn
	frameDisc     uint8 = 11 // disconnect
	frameMax            = frameDisc
)

// Header flags.
const (
	flagImm       uint8 = 1 << 0 // SEND/WRITE carry immediate data
	flagInv       uint8 = 1 << 1 // SEND with invalidate
	flagSolicited uint8 = 1 << 2 // SEND solicited event
	flagConsumer  uint8 = 1 << 3 // REJ issued by the peer application
)

// NAK syndromes.
const (
	synRNR       uint8 = 1 // receiver not ready: no receive posted
	synRemAccess uint8 = 2 // remote access error (rkey, PD, bounds, rights)
	synInvReq    uint8 = 3 // invalid request (length, IRD exceeded, bad invalidate)
	synRemOp     uint8 = 4 // remote operational error (bad receive WQE)
	synDead      uint8 = 5 // responder QP is in the error state (stands in for a transport timeout)
	synMax             = synDead
)

// maxMessage is the largest message (SEND, WRITE, READ) in bytes, as the
// 2 GiB limit of InfiniBand RC.
const maxMessage = 1 << 31

// errProtocol marks a malformed or out-of-sequence frame from the peer.
var errProtocol = errors.New("soft: protocol error")

// header is a decoded frame header.
type header struct {
	typ    uint8
	flags  uint8
	syn    uint8
	msn    uint32
	length uint32
	rkey   uint32
	raddr  uint64
	imm    uint32
}

// encode writes h into b[:headerLen].
func (h *header) encode(b []byte) {
	_ = b[headerLen-1]
	b[0] = h.typ
	b[1] = h.flags
	b[2] = h.syn
	b[3] = 0
	binary.LittleEndian.PutUint32(b[4:], h.msn)
	binary.LittleEndian.PutUint32(b[8:], h.length)
	binary.LittleEndian.PutUint32(b[12:], h.rkey)
	binary.LittleEndian.PutUint64(b[16:], h.raddr)
	binary.LittleEndian.PutUint32(b[24:], h.imm)
	binary.LittleEndian.PutUint32(b[28:], 0)
}

// decode parses and validates b[:headerLen]. Errors wrap errProtocol.
func (h *header) decode(b []byte) error {
	if len(b) < headerLen {
		return fmt.Errorf("%w: short header", errProtocol)
	}
	h.typ = b[0]
	h.flags = b[1]
	h.syn = b[2]
	h.msn = binary.LittleEndian.Uint32(b[4:])
	h.length = binary.LittleEndian.Uint32(b[8:])
	h.rkey = binary.LittleEndian.Uint32(b[12:])
	h.raddr = binary.LittleEndian.Uint64(b[16:])
	h.imm = binary.LittleEndian.Uint32(b[24:])
	if b[3] != 0 || binary.LittleEndian.Uint32(b[28:]) != 0 {
		return fmt.Errorf("%w: reserved header bytes set", errProtocol)
	}
	return h.validate()
}

// validate checks the per-type rules of the header.
func (h *header) validate() error {
	var allowedFlags uint8
	usesRemote, usesImm := false, false
	switch h.typ {
	case frameReq, frameRep:
		if h.length < cmFixedLen || h.length > cmFixedLen+verbs.MaxPrivateData {
			return fmt.Errorf("%w: CM payload length %d", errProtocol, h.length)
		}
	case frameRej:
		allowedFlags = flagConsumer
		if h.length > verbs.MaxRejectPrivateData {
			return fmt.Errorf("%w: reject payload length %d", errProtocol, h.length)
		}
	case frameRTU, frameAck, frameDisc, frameNak:
		if h.length != 0 {
			return fmt.Errorf("%w: type %d with payload", errProtocol, h.typ)
		}
	case frameSend:
		allowedFlags = flagImm | flagInv | flagSolicited
		usesImm = h.flags&(flagImm|flagInv) != 0
		if h.flags&flagImm != 0 && h.flags&flagInv != 0 {
			return fmt.Errorf("%w: SEND with both imm and inv", errProtocol)
		}
	case frameWrite:
		allowedFlags = flagImm
		usesRemote = true
		usesImm = h.flags&flagImm != 0
	case frameReadReq:
		usesRemote, usesImm = true, true
		if h.length != 0 {
			return fmt.Errorf("%w: READ request with payload", errProtocol)
		}
		if h.imm > maxMessage {
			return fmt.Errorf("%w: READ length %d", errProtocol, h.imm)
		}
	case frameReadResp:
	default:
		return fmt.Errorf("%w: unknown frame type %d", errProtocol, h.typ)
	}
	if h.flags&^allowedFlags != 0 {
		return fmt.Errorf("%w: flags %#x on frame type %d", errProtocol, h.flags, h.typ)
	}
	if h.length > maxMessage {
		return fmt.Errorf("%w: payload length %d", errProtocol, h.length)
	}
	if h.typ == frameNak {
		if h.syn == 0 || h.syn > synMax {
			return fmt.Errorf("%w: NAK syndrome %d", errProtocol, h.syn)
		}
	} else if h.syn != 0 {
		return fmt.Errorf("%w: syndrome on frame type %d", errProtocol, h.typ)
	}
	if !usesRemote && (h.rkey != 0 || h.raddr != 0) {
		return fmt.Errorf("%w: remote address on frame type %d", errProtocol, h.typ)
	}
	if !usesImm && h.imm != 0 {
		return fmt.Errorf("%w: immediate on frame type %d", errProtocol, h.typ)
	}
	return nil
}

// CM payload of REQ and REP, little-endian:
//
//	off size field
//	0   4    magic "SNIC"
//	4   1    version (1)
//	5   1    responder resources
//	6   1    initiator depth
//	7   1    retry count (0..7)
//	8   1    RNR retry count (0..7)
//	9   1    flow control (0 or 1)
//	10  1    private data length (0..MaxPrivateData)
//	11  1    reserved, 0
//	12  4    QP number of the sender
//	16  n    private data
const (
	cmFixedLen = 16
	cmMagic    = 0x43494e53 // "SNIC" little-endian
	cmVersion  = 1
)

// cmPayload is a decoded REQ/REP payload.
type cmPayload struct {
	qpn   uint32
	param verbs.ConnParam
}

// appendCM appends the encoded payload to dst.
func appendCM(dst []byte, qpn uint32, p *verbs.ConnParam) []byte {
	var b [cmFixedLen]byte
	binary.LittleEndian.PutUint32(b[0:], cmMagic)
	b[4] = cmVersion
	b[5] = p.ResponderResources
	b[6] = p.InitiatorDepth
	b[7] = p.RetryCount
	b[8] = p.RNRRetryCount
	if p.FlowControl {
		b[9] = 1
	}
	b[10] = uint8(len(p.PrivateData))
	binary.LittleEndian.PutUint32(b[12:], qpn)
	dst = append(dst, b[:]...)
	return append(dst, p.PrivateData...)
}

// decodeCM parses a REQ/REP payload. The private data is copied.
func decodeCM(b []byte) (cmPayload, error) {
	var c cmPayload
	if len(b) < cmFixedLen {
		return c, fmt.Errorf("%w: CM payload of %d bytes", errProtocol, len(b))
	}
	if binary.LittleEndian.Uint32(b[0:]) != cmMagic || b[4] != cmVersion {
		return c, fmt.Errorf("%w: bad CM magic or version", errProtocol)
	}
	if b[7] > 7 || b[8] > 7 || b[9] > 1 || b[11] != 0 {
		return c, fmt.Errorf("%w: bad CM parameters", errProtocol)
	}
	n := int(b[10])
	if n > verbs.MaxPrivateData || cmFixedLen+n != len(b) {
		return c, fmt.Errorf("%w: CM private data length %d in %d bytes", errProtocol, n, len(b))
	}
	c.qpn = binary.LittleEndian.Uint32(b[12:])
	c.param = verbs.ConnParam{
		ResponderResources: b[5],
		InitiatorDepth:     b[6],
		RetryCount:         b[7],
		RNRRetryCount:      b[8],
		FlowControl:        b[9] == 1,
		PrivateData:        append([]byte(nil), b[cmFixedLen:]...),
	}
	return c, nil
}
