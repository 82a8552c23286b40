package target

import "github.com/rdmablk/rdmablk/nvme"

// This file is the contract between the transport-agnostic core and a
// transport binding (target/rdma, later target/tcp). A transport:
//
//  1. reports its capabilities as data (TransportCaps, per Port);
//  2. calls Target.NewQueue when a host connects a queue (before the
//     fabrics Connect command arrives), and Queue.Destroy when the
//     connection ends;
//  3. for each received command capsule fills a Request it owns
//     (SQE, Dir, Length, Data), moves host-to-controller data into Data
//     before calling Queue.Execute, and after completion moves
//     controller-to-host data out of Data and sends the CQE.
//
// The core never imports a transport or a verbs provider.

// TransportCaps describe a transport binding (NVMe-oF spec: Identify
// Controller fabrics fields and CAP are derived from them).
type TransportCaps struct {
	// TrType is the discovery log transport type (nvme.TrTypeRDMA...).
	TrType uint8
	// KeyedSGL: the transport accepts keyed SGL data block descriptors.
	KeyedSGL bool
	// InCapsuleDataSize is the in-capsule data the transport accepts per
	// I/O command, in bytes (IOCCSZ = (64 + InCapsuleDataSize) / 16).
	InCapsuleDataSize int
	// MaxDataTransfer is the largest data transfer of one command, bytes
	// (MDTS is derived from it, in units of the 4 KiB minimum page size).
	MaxDataTransfer int
	// MaxQueueDepth is the largest I/O queue (CAP.MQES + 1).
	MaxQueueDepth int
	// MaxSGLDescriptors is MSDBD (1 for a single keyed descriptor).
	MaxSGLDescriptors int
	// InCapsuleDataOffset is where in-capsule data starts after the SQE,
	// in 16-byte units (Identify ICDOFF; 0 for RDMA and TCP), 0..65535.
	InCapsuleDataOffset int
	// ResponseCapsuleSize is the I/O response capsule in bytes (Identify
	// IORCSZ counts 16-byte units); 0 means 16, a bare CQE, as RDMA and
	// TCP send.
	ResponseCapsuleSize int
}

// Identify Controller fields derived from a transport's capabilities
// (NVMe-oF 1.1 §4.1, Figure 20 "I/O Command Capsule Supported Size" …).

// sgls is Identify SGLS: SGLs supported; keyed SGL data blocks only when
// the transport takes them (RDMA, not TCP); SGL offsets (in-capsule data
// addressed by an offset descriptor) when it accepts in-capsule data.
func (c *TransportCaps) sgls() uint32 {
	v := uint32(nvme.SGLSSupported)
	if c.KeyedSGL {
		v |= nvme.SGLSKeyed
	}
	if c.InCapsuleDataSize > 0 {
		v |= nvme.SGLSOffset
	}
	return v
}

// ioccsz is IOCCSZ: the command capsule (64-byte SQE plus in-capsule
// data) in 16-byte units.
func (c *TransportCaps) ioccsz() uint32 { return uint32(64+c.InCapsuleDataSize) / 16 }

// iorcsz is IORCSZ: the response capsule in 16-byte units.
func (c *TransportCaps) iorcsz() uint32 {
	if c.ResponseCapsuleSize == 0 {
		return 1
	}
	return uint32(c.ResponseCapsuleSize) / 16
}

// Port is a transport listener, listed in the discovery log.
type Port struct {
	ID      uint16
	TrType  uint8  // nvme.TrType*
	AdrFam  uint8  // nvme.AdrFam*
	TrAddr  string // e.g. "192.0.2.10"
	TrSvcID string // e.g. "4420"
	// TSAS is the transport specific address subtype (RDMA: QP type,
	// provider type, CM service); it is copied into discovery entries.
	TSAS [256]byte
	Caps TransportCaps
}

// QueueConn is implemented by the transport for each queue (one per RDMA
// connection). The core calls it; it must not block.
type QueueConn interface {
	// Complete hands back a request that Execute left pending. Its CQE is
	// final and, for controller-to-host transfers, Data[:Length] holds the
	// data. Called exactly once per pending request, from any goroutine
	// (backend workers, event raisers, timers), possibly before Execute
	// has returned false for it, and possibly after Queue.Destroy. The
	// core holds no lock while calling it.
	Complete(r *Request)
	// Close asks the transport to tear the queue's connection down (keep
	// alive expiry, controller teardown). The transport then calls
	// Queue.Destroy from its own goroutine. Idempotent.
	Close()
}

// Request is one command in flight. The transport owns the memory
// (preallocated, one per queue slot) and fills the fields marked
// "transport"; everything else is private to the core.
type Request struct {
	// SQE is the command (transport: copied from the capsule).
	SQE nvme.SQE
	// CQE is the response being built (core). The core sets CID, SQID,
	// SQHD and status; DW0/DW1 carry command results.
	CQE nvme.CQE
	// Dir is the data direction from the opcode (transport).
	Dir nvme.DataDirection
	// Length is the data length the host described in SGL1 (transport).
	Length uint32
	// Data is a buffer of Length bytes (transport): for host-to-controller
	// commands it holds the data when Execute is called; for
	// controller-to-host commands the core fills it. It stays owned by the
	// transport; the core only uses it until the request completes.
	Data []byte
	// Tag is free for the transport (e.g. its slot index).
	Tag uint32

	core requestCore
}

// Status returns the status in the CQE.
func (r *Request) Status() nvme.Status { return r.CQE.Status() }
