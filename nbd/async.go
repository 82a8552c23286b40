package nbd

// Op is the operation of an asynchronous Request.
type Op uint8

// Operations of a Request.
const (
	// OpRead fills Data from Off.
	OpRead Op = iota + 1
	// OpWrite writes Data at Off (with Force Unit Access when FUA; FUA is
	// set only for backends that implement FUAWriter).
	OpWrite
	// OpFlush makes every write completed before it durable (NBD_CMD_FLUSH
	// → NVMe Flush); sent only to backends that implement Flusher. Off,
	// Data and Len are zero.
	OpFlush
	// OpWriteZeroes zeroes Len bytes at Off (with FUA when FUA); sent only
	// to backends that implement Zeroer.
	OpWriteZeroes
	// OpDeallocate deallocates Len bytes at Off; sent only to backends
	// that implement Trimmer.
	OpDeallocate
)

// AsyncBackend is an optional Backend interface for backends that start
// requests without blocking the caller (in rdmablk: the initiator's
// multiplexed Submit). When an export's backend has it, each connection
// opens one AsyncQueue and its reader goroutine submits every aligned
// READ, WRITE, FLUSH, TRIM (without FUA) and WRITE_ZEROES to it and goes
// on reading; no goroutine is started per request. Requests the server
// emulates (unaligned read-modify-write, TRIM with FUA, zeroes with
// unaligned edges) still use the blocking Backend methods, on a
// goroutine of their own.
type AsyncBackend interface {
	Backend
	// OpenQueue is called once per connection, by its reader goroutine
	// before the first request. depth is the most requests the
	// connection has in flight on the queue at once; Request.Slot is
	// below it. An error ends the connection.
	OpenQueue(depth int) (AsyncQueue, error)
}

// AsyncQueue is one connection's submission queue into an AsyncBackend.
type AsyncQueue interface {
	// Submit starts r. It is called by the connection's reader goroutine
	// only (never concurrently with itself) and must not wait for r to
	// execute. The backend owns r, and reads (OpWrite) or fills (OpRead)
	// r.Data, until it calls r.Complete exactly once — from any
	// goroutine, also the caller's before Submit returns — and must not
	// touch r or r.Data after that.
	Submit(r *Request)
	// Close is called once, after every submitted request completed and
	// no Submit will follow; it releases what OpenQueue took.
	Close()
}

// Kicker is an optional AsyncQueue capability, for a queue that batches:
// its Submit may hold requests back until Kick. The connection's reader
// calls Kick after a run of submissions, before it waits for more input
// from the socket (its read buffer holds no whole request), for a free
// slot, or for the connection's end; Kick issues what Submit held and
// may complete requests before it returns. Reader goroutine only; it
// must not wait for a request to execute (it may wait for the transport
// to take what it sends).
type Kicker interface {
	Kick()
}

// Request is one block request given to an AsyncQueue. The connection
// owns it (one per slot, reused: no allocation per request) and fills
// the exported fields; the backend reads them and calls Complete.
type Request struct {
	// Op is the operation.
	Op Op
	// FUA asks for Force Unit Access (OpWrite, OpWriteZeroes).
	FUA bool
	// Slot identifies the request among those in flight on its queue:
	// 0 ≤ Slot < the depth given to OpenQueue, unique until Complete, so
	// a backend can keep per-request state in a table of depth entries.
	Slot int
	// Off is the byte offset, a multiple of the block size.
	Off int64
	// Len is the byte length of OpWriteZeroes and OpDeallocate, a
	// multiple of the block size.
	Len int64
	// Data is the OpRead destination or the OpWrite source (a pooled
	// buffer, length a multiple of the block size); nil for other ops.
	Data []byte

	c      *conn
	typ    uint16  // NBD command
	flags  uint16  // NBD command flags
	length uint32  // NBD length
	off    uint64  // NBD offset
	cookie uint64  // client's handle, echoed in the reply
	buf    *[]byte // payload behind Data (READ, WRITE); nil otherwise
	keep   *[]byte // the slot's buffer between requests (see payload)
	errno  uint32  // reply error
	hdr    [replyHdrSize]byte
}

// Complete finishes r with err (nil: success; a syscall.Errno the
// protocol names is passed to the client, anything else becomes EIO).
// The backend calls it exactly once per Submit, from any goroutine; it
// writes the reply (or queues it behind the one being written) and may
// block on the client's socket for as long as that write takes. r
// belongs to the connection again when it is called.
func (r *Request) Complete(err error) {
	r.c.finish(r, errnoOrZero(err), false)
}

// CompleteMore is Complete for a backend that completes a run of its
// queue's requests in a row on one goroutine (for example, draining a
// completion channel): r's reply waits for the next Complete on the same
// queue, and the run's replies go out in one vectored write. The caller
// must end the run with Complete, without waiting for anything in
// between; a reply whose run never ends is never sent.
func (r *Request) CompleteMore(err error) {
	r.c.finish(r, errnoOrZero(err), true)
}
