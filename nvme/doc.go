// Package nvme holds the NVMe and NVMe-over-Fabrics wire formats used by
// rdmablk: submission and completion queue entries, SGL descriptors,
// status codes, fabrics Connect/Property commands, the RDMA CM private
// data, Identify structures, features, asynchronous events, log pages
// (error, SMART, firmware slot, changed namespaces, commands effects, ANA,
// discovery) and NQNs. It does no I/O and starts no goroutines.
//
// Sources: NVMe base spec 2.0 (cited as §x / Figure n), the NVM Command Set
// spec 1.0 and the NVMe-oF spec 1.1 (RDMA transport binding). Offsets were
// checked against public headers (Linux include/linux/nvme.h, libnvme
// types.h, SPDK nvme_spec.h / nvmf_spec.h).
//
// Ownership and buffer lifetimes:
//   - SQE, CQE and SGL are fixed-size byte arrays: values, not views into
//     a receive buffer. LoadSQE/LoadCQE copy out of the buffer, so a
//     transport may repost its receive buffer as soon as they return.
//     Command views (ConnectCmd, RWCmd, IdentifyCmd, GetLogPageCmd, ...)
//     wrap a *SQE the caller owns; they do not copy.
//   - Parse* functions never retain their input: every string and slice
//     they return is a fresh copy.
//   - Marshal* functions write into a caller buffer, never retain it, and
//     zero every reserved byte of the region they own. Those returning an
//     error check the buffer and the values first and leave b unchanged on
//     error (ErrShort, ErrBadNQN, ErrTooLong, ...). MarshalNSList and
//     MarshalChangedNSList have no error: they fill what fits, which is the
//     spec's own truncation rule for namespace lists.
//   - SQE setters (SetRW, SetIdentify, SetConnect, ...) rewrite the whole
//     command except the flags byte (FUSE/PSDT), the CID and the data
//     pointer (SGL1), which may be set before or after them.
//
// Errors: bad input from the wire or out-of-range values are reported as
// the sentinel errors in errors.go (or a false ok result); nothing here
// panics on any input. Status is the NVMe completion status and is also a
// Go error for control-path callers.
//
// Concurrency: no function blocks or keeps state; distinct values may be
// used from any goroutines. The per-I/O accessors (SQE/CQE/SGL fields,
// SetRW, Status, InCapsuleSpan, DSM ranges) allocate nothing.
package nvme
