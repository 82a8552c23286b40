// Package attach runs attachments: an initiator Session to one NVMe-oF
// namespace (one or more paths, reconnect and replay) served as an NBD
// export on a unix socket (and optionally TCP), attached to a kernel
// /dev/nbdX when the nbd module is present. It backs `rdmablk connect`,
// `rdmablk serve`, `rdmablk list` and `rdmablk disconnect`.
//
// Each running attachment registers itself in the run directory as
// NAME.json (its state: pid, sockets, device) and answers a small JSON
// control protocol over HTTP on the unix socket NAME.ctl: GET /status,
// POST /disconnect. The state file is removed when the attachment stops.
//
// # Ownership
//
// An Attachment owns its Session (and through it one protection domain
// and its queue pairs per path: attachments never share RDMA resources),
// its nbd.Server, listeners, kernel device and control server; Stop
// releases them in reverse order: kernel device, NBD server, session.
package attach
