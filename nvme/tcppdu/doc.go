// Package tcppdu holds the NVMe/TCP transport PDU wire formats (NVMe/TCP
// Transport Specification 1.0, ratified as TP 8000; cited as "TCP §x"):
// the common header, ICReq/ICResp, CapsuleCmd/CapsuleResp, H2CData,
// C2HData, R2T, H2CTermReq/C2HTermReq, and the CRC32C header and data
// digests. Like its parent package nvme it does no I/O and starts no
// goroutines; the binding (target/tcp, later the initiator) owns the
// socket. It is a subpackage rather than files in nvme so that its short
// names (tcppdu.ICReq, tcppdu.TypeR2T) do not crowd package nvme, and it is
// not called "tcp" so that target/tcp can import it without an alias.
//
// Field offsets were checked against Linux include/linux/nvme-tcp.h and
// SPDK's nvmf_spec.h.
//
// # Receiving a PDU
//
//  1. read CommonHeaderSize bytes, ParseCommonHeader;
//  2. Frame checks the header against the PDU type's fixed HLEN, the
//     negotiated digests and data alignment, and the largest data the
//     receiver accepts for that type, and says where the header digest,
//     data and data digest lie within PLEN — every length is checked
//     before any arithmetic can overflow;
//  3. read the rest of the header (and its digest: CheckHeaderDigest), then
//     parse the type's header (ParseICReq, ParseCapsuleCmd, ParseData, ...);
//  4. read the data into the caller's buffer (and check its digest:
//     DataDigest).
//
// Every rejection is an *Error carrying the Fatal Error Status (FES) and
// Fatal Error Information (FEI) of the TermReq the receiver must send
// before it closes the connection (TCP §3.6.2.5, §3.6.2.6).
//
// # Ownership and buffer lifetimes
//
// Parse* functions copy what they return out of the input; Put* and
// Marshal* functions write into a caller buffer and keep no reference.
// Header values are small structs (no pointers): nothing here allocates on
// the I/O path except an *Error when a PDU is rejected.
//
// # Concurrency
//
// No state: every function may be called from any goroutine.
package tcppdu
