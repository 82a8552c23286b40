package nbd

// Poller is an optional AsyncQueue capability (Linux; with Kicker), for a
// queue whose completions the connection's goroutine can wait for in its
// own poll set, next to the socket, instead of a completion goroutine
// waking it: in rdmablk, the initiator Submitter of the connection's I/O
// queue, whose RDMA completion channel is that descriptor. The server
// uses it on the sockets it serves by descriptor (the kernel path,
// AttachKernel): one goroutine per connection then reads requests,
// submits them, reaps their completions and writes the replies, and
// sleeps only in poll(2) on the socket, the queue's descriptor and the
// connection's eventfd (see loop_linux.go).
//
// The methods are those of initiator.Submitter and are called from the
// connection's goroutine only:
//   - SetWaker once, before the first Submit: wake asks the goroutine to
//     run its loop again (Kick, Arm); it is called from another
//     goroutine and must not block. From then on the queue completes
//     requests with Request.Complete on whichever goroutine reaps them —
//     mostly the connection's own, inside Kick or Arm.
//   - Arm after every Kick, before sleeping: it arms the descriptor, may
//     complete requests, and returns the descriptor to poll for POLLIN
//     (fd < 0: none now; completions then come from elsewhere and wake
//     the loop through Complete). signalled reports that the descriptor
//     Arm last returned was found readable.
//   - Release once, after the last request completed: the queue takes its
//     completions back.
type Poller interface {
	Kicker
	SetWaker(wake func())
	Arm(signalled bool) (fd int, key uint64)
	Release()
}
