// Package attach runs attachments: an initiator Session to one NVMe-oF
// namespace (one or more paths, reconnect and replay) given to the kernel
// through a frontend — ublk (/dev/ublkbN, through package ublk and the
// adapter in ublkback) or NBD (an export on a unix socket, and optionally
// TCP, attached to /dev/nbdX when the nbd module is present; the export is
// served with either frontend). It backs `rdmablk connect`, `rdmablk
// serve`, `rdmablk list` and `rdmablk disconnect`.
//
// Frontend choice (Config.Frontend): auto takes ublk when
// /dev/ublk-control exists — as root it runs `modprobe ublk_drv` once per
// process when it does not — else nbd; the choice and its reason are in
// Status.Frontend / FrontendNote and the log.
//
// Secrets (Config.DHCHAPSecret / DHCHAPCtrlSecret, or the *File variants;
// secret.go) are parsed when the configuration is validated and handed to
// the session's initiator.Options; the Secret type redacts itself in
// every printed or marshalled form, and a secret file readable by others
// is refused. The state file never holds them.
//
// Each running attachment registers itself in the run directory as
// NAME.json (its state: pid, sockets, and the ublk device id) and answers
// a small JSON control protocol over HTTP on the unix socket NAME.ctl:
// GET /status, POST /disconnect. Stop removes the state file. A process
// that dies without Stop (kill -9, a crash) leaves it behind, and with it
// the ublk device, which the kernel keeps (UBLK_F_USER_RECOVERY) with its
// I/O held: starting the attachment again reads the old state and
// recovers that device (ublk.Recover: same /dev/ublkbN, held I/O reissued,
// no error seen by the application); when the device is gone it creates
// one. Disconnect of such a dead attachment stops and deletes the device
// (held I/O then fails with EIO) and removes the stale files. Stop — a
// disconnect, or SIGTERM/SIGINT of connect --foreground or serve — stops
// and deletes the ublk device (I/O in flight completes first).
//
// # Ownership
//
// An Attachment owns its Session (and through it one protection domain
// and its queue pairs per path: attachments never share RDMA resources),
// its ublk.Device or kernel NBD device, its nbd.Server, listeners and
// control server; Stop releases them in reverse order: kernel device
// (ublk or NBD), NBD server, session (after a final Flush).
//
// # The NBD request path
//
// The export's backend (nbdBackend) is the Session with every capability
// it has, and an nbd.AsyncBackend: per NBD connection a table of
// MaxInFlight initiator Requests (indexed by the NBD request's slot) and
// one completion goroutine. The connection's reader submits each request
// with Session.Submit and goes on reading; the completion goroutine
// receives the finished Requests from their Done channel (room for every
// slot, so a queue goroutine never waits on it) and completes the NBD
// requests — those that came back together as one run, whose replies it
// then writes in one vectored write. NBD payload buffers are the
// Requests' Data (the initiator copies them to and from its registered
// buffers) until the NBD request is completed.
package attach
