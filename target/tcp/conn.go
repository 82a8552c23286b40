package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/internal/tcpzc"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
	"github.com/rdmablk/rdmablk/target"
)

// readBufSize is the socket read buffer: PDU headers come out of it in
// one read; data reads larger than it go straight into the slot's buffer.
const readBufSize = 32 << 10

// conn is one NVMe/TCP connection: one NVMe queue. See doc.go for the
// goroutines and ownership.
type conn struct {
	l    *Listener
	nc   net.Conn
	src  sockReader // br's source
	br   *bufio.Reader
	peer string
	host string // peer's address without port (unconnected caps)
	// unconn: counted in the listener's unconnected connections
	// (Listener.mu).
	unconn bool

	// Set by the ICReq exchange, then read-only.
	dg        tcppdu.Digests
	hostAlign int // (HPDA+1)*4: PDO alignment of C2HData

	// Reader goroutine only.
	q         *target.Queue
	connected bool // the queue's Fabrics Connect succeeded
	// batching: between Queue.BeginBatch and EndBatch. The reader opens a
	// batch at a PDU and ends it before a read that would block (or after
	// maxBatch commands, see sockReader), so backend I/O of pipelined
	// commands reaches an io_uring backend in one submission, their
	// responses leave in one write, and none waits on the socket.
	batching   bool
	batchCmds  int // commands taken in this batch
	batchBytes int // bytes read from the socket in this batch
	hdr        [tcppdu.ICReqHLen + tcppdu.DigestSize + tcppdu.MaxTermReqData]byte
	hdrN       int // bytes of the current PDU's header in hdr
	dig        [tcppdu.DigestSize]byte

	// slots: depth for the queue's entries plus spare ones (maxBatch, or
	// fewer for a queue near 65,536 entries; see send.go); depth is what a
	// host may have outstanding, spare the most responses in one write.
	slots []slot
	depth int
	spare int
	free  freeList // free slot indices (reader takes, send path returns)
	// inWrite counts the responses in the write under way: their CQEs may
	// have reached the host although their slots are not free yet.
	inWrite atomic.Int32
	// zcHeld counts the slots of responses written zero-copy whose
	// notices are not in yet (zc.go): like inWrite, the host may have
	// their CQEs. zc is the connection's zero-copy sender once the send
	// path made one (zcTried: it tried; token holder only).
	zcHeld  atomic.Int32
	zc      atomic.Pointer[tcpzc.Sender]
	zcTried bool
	zcLocal bool // the peer is on a loopback address: no zero copy
	// zcIO: the connection is a connected I/O queue (zero copy is for
	// read data; the admin queue's responses stay simple).
	zcIO atomic.Bool
	// zcDone: zcClose ran; no sender is made after it (zcMu).
	zcMu   sync.Mutex
	zcDone bool
	snd    sendState
	kick   chan struct{} // passes the write token to the writer (capacity 1)
	done   chan struct{}
	wdone  chan struct{} // closed when the writer has exited
	// wstop is closed when the send path stopped: TermReq written or a
	// write failed.
	wstop     chan struct{}
	wstopOnce sync.Once

	// draining is set by Listener.Close: the reader stops taking PDUs
	// and waits for the commands in flight (see drainWait).
	draining atomic.Bool
	freed    chan struct{} // the send path freed slots (capacity 1)
	// heldAER counts Asynchronous Event Requests the core holds (admin
	// queue): they complete only when the queue is destroyed, so a drain
	// does not wait for them (as the RDMA binding).
	heldAER atomic.Int32
	h2c     int // reader: slots waiting for H2CData

	// quiet is closed once the reader stopped and its commands in flight
	// are answered (or it gave up on them); Listener.Close waits for every
	// connection's before any connection ends, so that no queue is
	// destroyed — which ends its controller's other queues — while another
	// still drains.
	quiet     chan struct{}
	quietOnce sync.Once

	closeOnce sync.Once
	doneOnce  sync.Once
}

// errDraining ends the reader when the listener closes.
var errDraining = errors.New("tcp: listener closing")

func newConn(l *Listener, nc net.Conn) *conn {
	depth := max(l.cfg.MaxQueueDepth, AdminQueueDepth)
	// Slot indices are 16-bit TTAGs: at most 65,536 slots, so a queue of
	// 65,535 entries gets one spare slot and writes of one response.
	spare := min(maxBatch, 1<<16-depth)
	n := depth + spare
	c := &conn{l: l, nc: nc, peer: nc.RemoteAddr().String(),
		slots: make([]slot, n), depth: depth, spare: spare, free: freeList{s: make([]uint16, 0, n)},
		kick: make(chan struct{}, 1), done: make(chan struct{}), wdone: make(chan struct{}), wstop: make(chan struct{}),
		freed: make(chan struct{}, 1), quiet: make(chan struct{}), zcLocal: tcpzc.LocalPeer(nc)}
	for i := range c.slots {
		c.slots[i].idx = uint16(i)
		c.slots[i].req.Tag = uint32(i)
	}
	for i := n - 1; i >= 0; i-- {
		c.free.push(uint16(i))
	}
	c.src.init(c)
	c.br = bufio.NewReaderSize(&c.src, readBufSize)
	w := &c.snd
	w.pend = make([]job, 0, n+2)
	w.batch = make([]job, 0, spare)
	w.out = make([]byte, 0, maxBatch*jobBytes)
	w.bufs = make([][]byte, 0, 2*maxBatch+1)
	w.sock.init(nc, 2*maxBatch+1)
	return c
}

// Complete implements target.QueueConn: the core hands back a command
// Execute left pending. Any goroutine; it may write the response (and
// others pending) to the socket, but never blocks on it (send.go).
func (c *conn) Complete(r *target.Request) {
	c.post(job{kind: jobResp, idx: uint16(r.Tag)})
}

// Close implements target.QueueConn: tear the connection down (keep-alive
// expiry, controller teardown). The reader then destroys the queue.
// Idempotent, any goroutine.
func (c *conn) Close() { c.closeConn() }

func (c *conn) closeConn() {
	c.closeOnce.Do(func() { _ = c.nc.Close() })
}

// serve is the reader goroutine: ICReq, then PDUs until the connection
// ends or a protocol error terminates it.
func (c *conn) serve() {
	defer c.l.forget(c)
	defer c.markQuiet()
	if d := c.l.cfg.ConnectTimeout; d > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(d))
	}
	go c.writer()
	err := c.handshake()
	if err == nil {
		err = c.loop()
		// Held-back I/O goes out before anything waits for it.
		c.endBatch()
	}
	var perr *tcppdu.Error
	switch {
	case c.draining.Load() && !errors.As(err, &perr):
		c.drainWait()
		c.stopWriter(nil) // the last responses may still be pending
	case errors.As(err, &perr):
		c.l.log.Warn("tcp: protocol error; terminating connection", "peer", c.peer, "err", err)
		c.l.stats.terminated.Add(1)
		c.terminate(perr)
	case err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed):
		c.l.log.Info("tcp: connection ended", "peer", c.peer, "err", err)
	}
	if c.draining.Load() {
		c.markQuiet()
		<-c.l.allQuiet
	}
	c.closeConn()
	c.doneOnce.Do(func() { close(c.done) })
	<-c.wdone
	c.zcClose()
	if c.q != nil {
		c.q.Destroy()
	}
}

// drain asks the connection to end gracefully (Listener.Close): the
// reader stops reading (a read deadline in the past wakes it), lets the
// commands the core has finish and their responses go out, then closes.
// Capsules not yet read, and writes still waiting for H2CData, are not
// executed: the host retries them after reconnecting. Any goroutine.
func (c *conn) drain() {
	c.draining.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
}

func (c *conn) markQuiet() { c.quietOnce.Do(func() { close(c.quiet) }) }

// drainWait waits, at most DrainTimeout, until every slot is free again
// except those waiting for H2CData (which will not come). Reader only.
func (c *conn) drainWait() {
	t := time.NewTimer(c.l.cfg.DrainTimeout)
	defer t.Stop()
	// Slots zero-copy sends hold are done: their responses are out.
	for c.free.len()+c.h2c+int(c.heldAER.Load())+int(c.zcHeld.Load()) < len(c.slots) {
		select {
		case <-c.freed:
		case <-c.wstop:
			return
		case <-t.C:
			c.l.stats.drainTimeouts.Add(1)
			c.l.log.Warn("tcp: drain timed out; closing with commands in flight", "peer", c.peer,
				"in_flight", len(c.slots)-c.free.len()-c.h2c)
			return
		}
	}
}

// terminate sends a C2HTermReq for e (after whatever is pending) and
// waits, bounded, until it is written.
func (c *conn) terminate(e *tcppdu.Error) { c.stopWriter(e) }

// readFull reads len(b) bytes, from what the read buffer holds when it
// holds them (tcppdu.ReadFull; no socket read, so sockReader and the batch
// are not involved). A read that would block ends the batch first
// (sockReader).
func (c *conn) readFull(b []byte) error { return tcppdu.ReadFull(c.br, b) }

// beginBatch opens a batch: the core may hold back backend I/O, and
// responses wait for the batch's end, to leave in one write.
func (c *conn) beginBatch() {
	if !c.batching {
		c.q.BeginBatch()
		c.batching = true
		c.batchCmds, c.batchBytes = 0, 0
		c.deferWrites()
	}
}

// endBatch ends the batch: held-back I/O goes to the backend (whose
// inline completions join the pending responses), then what is pending
// is written, unless a write is under way (send.go). It does not block
// on the socket.
func (c *conn) endBatch() {
	if c.batching {
		c.batching = false
		c.q.EndBatch()
		c.undeferWrites()
	}
}

// readHeader reads hdr[from:to] and records that to bytes of the header
// are there (for the TermReq's copy of the header in error).
func (c *conn) readHeader(from, to int) error {
	if from == 0 {
		c.hdrN = 0
	}
	if err := c.readFull(c.hdr[from:to]); err != nil {
		return err
	}
	c.hdrN = to
	return nil
}

// readCommonHeader reads a PDU's common header into hdr. p is what
// tcppdu.Buffered returned: when it holds the common header (in a batch of
// commands, usually the whole PDU) the header is copied from it and left
// in the read buffer until readHeaderRest; otherwise it is read.
func (c *conn) readCommonHeader(p []byte) error {
	if len(p) < tcppdu.CommonHeaderSize {
		return c.readHeader(0, tcppdu.CommonHeaderSize)
	}
	copy(c.hdr[:tcppdu.CommonHeaderSize], p)
	c.hdrN = tcppdu.CommonHeaderSize
	return nil
}

// readHeaderRest reads hdr[CommonHeaderSize:n], the rest of the header
// readCommonHeader read from the same p: from p when it holds it
// (tcppdu.HeaderRest), else from the socket.
func (c *conn) readHeaderRest(p []byte, n int) error {
	if tcppdu.HeaderRest(c.br, p, c.hdr[:n]) {
		c.hdrN = n
		return nil
	}
	return c.readHeader(tcppdu.CommonHeaderSize, n)
}

// handshake reads the ICReq, answers ICResp and creates the core queue.
// A first PDU that is not an ICReq is a PDU Sequence Error.
func (c *conn) handshake() error {
	if err := c.readHeader(0, tcppdu.CommonHeaderSize); err != nil {
		return err
	}
	h, _ := tcppdu.ParseCommonHeader(c.hdr[:])
	if h.Type != tcppdu.TypeICReq {
		return &tcppdu.Error{FES: tcppdu.FESPDUSequenceError, Reason: fmt.Sprintf("%s before ICReq", tcppdu.TypeName(h.Type))}
	}
	if _, err := h.Frame(tcppdu.Limits{}); err != nil {
		return err
	}
	if err := c.readHeader(tcppdu.CommonHeaderSize, tcppdu.ICReqHLen); err != nil {
		return err
	}
	req, err := tcppdu.ParseICReq(c.hdr[:tcppdu.ICReqHLen])
	if err != nil {
		return err
	}
	// Both digests are supported: grant what the host asked for.
	c.dg = tcppdu.Digests{Header: req.DGST&tcppdu.DGSTHeader != 0, Data: req.DGST&tcppdu.DGSTData != 0}
	c.hostAlign = tcppdu.PDAAlign(req.HPDA)
	depth := max(c.l.cfg.MaxQueueDepth, AdminQueueDepth)
	q, err := c.l.cfg.Target.NewQueue(c.l.cfg.PortID, c, depth)
	if err != nil {
		return fmt.Errorf("tcp: creating queue: %w", err)
	}
	c.q = q
	var resp [tcppdu.ICRespHLen]byte
	tcppdu.ICResp{PFV: tcppdu.PFV10, CPDA: 0, DGST: c.dg.Bits(), MAXH2CDATA: uint32(c.l.cfg.MaxH2CData)}.Marshal(resp[:])
	// The writer has nothing to send yet and the host waits for ICResp:
	// the reader may write it.
	_, err = c.nc.Write(resp[:])
	return err
}

// maxICD is the in-capsule data the queue accepts now.
func (c *conn) maxICD() int {
	icd := c.l.cfg.InCapsuleDataSize
	switch {
	case !c.connected:
		return max(icd, AdminInCapsuleDataSize)
	case c.q.QID() == 0:
		return AdminInCapsuleDataSize
	}
	return icd
}

// loop reads PDUs until an error.
func (c *conn) loop() error {
	for {
		if !c.connected && c.q.Controller() != nil {
			c.connected = true
			c.zcIO.Store(c.q.QID() != 0)
			c.l.connected(c)
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		// After clearing the deadline: drain sets the flag before its
		// deadline, so one of the two stops this reader.
		if c.draining.Load() {
			return errDraining
		}
		p := tcppdu.Buffered(c.br)
		if err := c.readCommonHeader(p); err != nil {
			return err
		}
		h, _ := tcppdu.ParseCommonHeader(c.hdr[:])
		var max int
		switch h.Type {
		case tcppdu.TypeCapsuleCmd:
			max = c.maxICD()
		case tcppdu.TypeH2CData:
			max = c.l.cfg.MaxH2CData
		case tcppdu.TypeH2CTermReq:
		case tcppdu.TypeICReq:
			return &tcppdu.Error{FES: tcppdu.FESPDUSequenceError, Reason: "second ICReq"}
		default:
			return &tcppdu.Error{FES: tcppdu.FESInvalidHeaderField, FEI: 0,
				Reason: fmt.Sprintf("%s is not a host-to-controller PDU", tcppdu.TypeName(h.Type))}
		}
		f, err := h.Frame(tcppdu.Limits{Digests: c.dg, MaxData: max})
		if err != nil {
			return err
		}
		if err := c.readHeaderRest(p, f.HeaderLen); err != nil {
			return err
		}
		if h.Type != tcppdu.TypeH2CTermReq {
			c.beginBatch()
		}
		if f.HeaderDigest {
			if err := tcppdu.CheckHeaderDigest(c.hdr[:f.HeaderLen], int(h.HLen)); err != nil {
				return err
			}
		}
		switch h.Type {
		case tcppdu.TypeCapsuleCmd:
			err = c.capsule(f)
		case tcppdu.TypeH2CData:
			err = c.h2cData(f)
		default:
			err = c.hostTerm(f)
		}
		if err != nil {
			return err
		}
	}
}

// skipPad reads the padding between the header (and its digest) and PDO.
func (c *conn) skipPad(f tcppdu.Frame) error {
	if n := f.DataOff - f.HeaderLen; n > 0 {
		_, err := c.br.Discard(n)
		return err
	}
	return nil
}

// readData reads f's data into b (len DataLen) and its digest, and
// reports whether the digest matched (true without a data digest).
func (c *conn) readData(f tcppdu.Frame, b []byte) (bool, error) {
	if err := c.skipPad(f); err != nil {
		return false, err
	}
	if err := c.readFull(b); err != nil {
		return false, err
	}
	if !f.DataDigest {
		return true, nil
	}
	if err := c.readFull(c.dig[:]); err != nil {
		return false, err
	}
	return binary.LittleEndian.Uint32(c.dig[:]) == tcppdu.Digest(b), nil
}

// capsule handles a CapsuleCmd whose header is in c.hdr.
func (c *conn) capsule(f tcppdu.Frame) error {
	sqe, _ := tcppdu.ParseCapsuleCmd(c.hdr[:])
	// The host's outstanding commands: busy slots but those whose CQE may
	// already be out (send.go). inWrite is read before free.len (the send
	// path frees a write's slots before it clears inWrite), so the count
	// may fall short of the truth but never exceeds it.
	inWrite := int(c.inWrite.Load())
	held := int(c.zcHeld.Load())
	out := len(c.slots) - c.free.len() - inWrite - held
	if !c.connected && out >= preConnectSlots {
		return fmt.Errorf("tcp: host %s sent more than %d commands before its Fabrics Connect completed", c.peer, preConnectSlots)
	}
	c.batchCmds++
	idx, ok := c.free.pop()
	if !ok && held > 0 && out < c.depth {
		// Zero-copy sends hold the free slots until the host's
		// acknowledgements reach us.
		idx, ok = c.zcSlot()
	}
	if !ok || out >= c.depth {
		// More commands outstanding than the queue has entries: the host
		// ignored SQ flow control.
		return fmt.Errorf("tcp: host %s exceeded the queue depth (%d commands outstanding)", c.peer, out+1)
	}
	s := &c.slots[idx]
	s.reset()
	s.state = slotCore // until it waits for H2CData
	s.req.SQE = sqe
	if f.DataLen > 0 {
		buf := s.ensure(f.DataLen, c.l.cfg.MaxDataTransfer)
		ok, err := c.readData(f, buf[:f.DataLen])
		if err != nil {
			return err
		}
		s.digestErr = !ok
	}
	st, need := c.parseSGL(s, f.DataLen)
	if st == nvme.StatusSuccess && s.digestErr {
		// TCP §3.6.2.1 (and SPDK, nvmet): a data digest error fails the
		// command with Transient Transport Error; the connection stays.
		st = nvme.StatusTransientTransportError
		c.l.stats.dataDigestErrors.Add(1)
	}
	if st != nvme.StatusSuccess {
		c.answer(s, st)
		return nil
	}
	if need {
		s.state = slotH2C
		c.h2c++
		s.want = s.req.Length
		c.post(job{kind: jobR2T, idx: idx, cid: sqe.CID(), length: s.want})
		return nil
	}
	c.execute(s)
	return nil
}

// h2cData handles an H2CData PDU: data for the R2T of one slot.
func (c *conn) h2cData(f tcppdu.Frame) error {
	d, err := tcppdu.ParseData(c.hdr[:f.HeaderLen], f)
	if err != nil {
		return err
	}
	const feiCCCID, feiTTAG, feiFlags = 8, 10, 1
	if int(d.TTAG) >= len(c.slots) || c.slots[d.TTAG].state != slotH2C {
		return &tcppdu.Error{FES: tcppdu.FESInvalidHeaderField, FEI: feiTTAG,
			Reason: fmt.Sprintf("H2CData TTAG %d names no transfer in progress", d.TTAG)}
	}
	s := &c.slots[d.TTAG]
	if d.CCCID != s.req.SQE.CID() {
		return &tcppdu.Error{FES: tcppdu.FESInvalidHeaderField, FEI: feiCCCID,
			Reason: fmt.Sprintf("H2CData CCCID %d, transfer %d is for command %d", d.CCCID, d.TTAG, s.req.SQE.CID())}
	}
	if err := d.InWindow(0, s.want); err != nil {
		return err
	}
	if d.DATAO != s.got {
		return &tcppdu.Error{FES: tcppdu.FESDataOutOfRange, FEI: 12,
			Reason: fmt.Sprintf("H2CData DATAO %d, expected %d (data must arrive in order)", d.DATAO, s.got)}
	}
	ok, err := c.readData(f, s.req.Data[d.DATAO:d.DATAO+d.DATAL])
	if err != nil {
		return err
	}
	if !ok {
		s.digestErr = true
	}
	s.got += d.DATAL
	last := f.Flags&tcppdu.FlagLastPDU != 0
	if last != (s.got == s.want) {
		return &tcppdu.Error{FES: tcppdu.FESInvalidHeaderField, FEI: feiFlags,
			Reason: fmt.Sprintf("H2CData LAST_PDU %v with %d of %d bytes received", last, s.got, s.want)}
	}
	if !last {
		return nil
	}
	c.h2c--
	if s.digestErr {
		c.l.stats.dataDigestErrors.Add(1)
		c.answer(s, nvme.StatusTransientTransportError)
		return nil
	}
	c.execute(s)
	return nil
}

// hostTerm handles an H2CTermReq: the host is closing the connection.
func (c *conn) hostTerm(f tcppdu.Frame) error {
	end := max(f.HeaderLen, f.DataOff+f.DataLen) // no error data: DataOff 0
	if err := c.readFull(c.hdr[f.HeaderLen:end]); err != nil {
		return err
	}
	t, err := tcppdu.ParseTermReq(c.hdr[:end], f)
	if err != nil {
		return err
	}
	c.l.stats.hostTerminated.Add(1)
	c.l.log.Warn("tcp: host terminated the connection", "peer", c.peer, "fes", t.FES, "reason", tcppdu.FESName(t.FES), "fei", t.FEI)
	return io.EOF
}

// execute runs s on the core; a command completed inline is posted now,
// others when the core calls Complete.
func (c *conn) execute(s *slot) {
	s.state = slotCore
	if s.req.Dir == nvme.DirCtrlToHost && c.q.QID() == 0 {
		// Admin data (Identify, log pages) may be shorter than the
		// host asked for: never send a previous command's bytes.
		clear(s.req.Data)
	}
	if isAER(c, &s.req.SQE) {
		c.heldAER.Add(1)
	}
	if c.q.Execute(&s.req) {
		c.post(job{kind: jobResp, idx: s.idx})
	}
}

// isAER reports an Asynchronous Event Request on the admin queue.
func isAER(c *conn, sqe *nvme.SQE) bool {
	return c.q.QID() == 0 && sqe.Opcode() == nvme.AdminAsyncEvent
}

// answer completes s with status st without running it (bad SGL, data
// digest error): the SQ head still advances (target.Queue.Consume).
func (c *conn) answer(s *slot, st nvme.Status) {
	s.state = slotCore
	s.req.Dir, s.req.Length, s.req.Data = nvme.DirNone, 0, nil
	s.req.CQE = nvme.CQE{}
	s.req.CQE.SetCID(s.req.SQE.CID())
	s.req.CQE.SetSQID(c.q.QID())
	s.req.CQE.SetSQHD(c.q.Consume())
	s.req.CQE.SetStatus(st)
	c.post(job{kind: jobResp, idx: s.idx})
}
