package initiator

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
	"github.com/rdmablk/rdmablk/verbs"
)

// NVMe/TCP constants of the host side.
const (
	// tcpAdminInCapsule is the in-capsule data of an admin command: the
	// admin capsule is fixed at 8 KiB of data (NVMe/TCP 1.0 §3.3, Linux
	// NVME_TCP_ADMIN_CCSZ).
	tcpAdminInCapsule = 8192
	// tcpSlotHdr is the per-slot room for a CapsuleCmd header: 72 bytes,
	// the header digest, and padding up to PDO (CPDA ≤ 31: 128 bytes).
	tcpSlotHdr = 128
	// tcpReadBuf is the size of the connection's header read buffer; a
	// data read at least this large goes straight into the command's
	// buffer.
	tcpReadBuf = 32 << 10
	// tcpTermWait bounds the write of an H2CTermReq to a target that does
	// not read.
	tcpTermWait = 2 * time.Second
)

// tcpWire is the wire of one queue over NVMe/TCP (NVMe/TCP Transport
// Specification 1.0, "TCP §x"; PDU formats in nvme/tcppdu): one TCP
// connection, initialised by ICReq / ICResp.
//
// The queue's owner (IOQueue goroutine, admin mutex) builds capsules in
// per-slot preallocated PDU headers and writes a whole batch with one
// vectored write in flush. One reader goroutine per connection reads
// every PDU: C2HData is read straight into the command's buffer, an R2T
// is answered with H2CData PDUs from it (written by the reader, under the
// same write lock as flush), and a CapsuleResp is handed to the owner
// through a ring that poll drains. Protocol errors end the connection
// (an H2CTermReq with the FES when the PDU was malformed, then close):
// connDone closes and the controller is lost, never a panic.
//
// Sharing between the owner and the reader goes through tcpSlot.state:
// the owner fills a slot's data description and then publishes it with
// an atomic store (armed with the CID); the reader uses the description
// only while the slot is armed and disarms it (CAS) when the command's
// response arrives, before it hands the response over. A slot is armed
// again only after the owner consumed that response, so the ring never
// holds more entries than there are slots.
type tcpWire struct {
	q    *qpair
	conn net.Conn
	br   *bufio.Reader
	wr   io.Writer // conn (tests: any writer)

	dg        tcppdu.Digests
	cpda      int    // data alignment of PDUs the host sends, bytes
	maxH2C    uint32 // MAXH2CDATA
	inCapsule int    // in-capsule data limit
	maxData   int    // largest data of one command (C2HData limit)

	// Owner side (no lock: the qpair's owner).
	sqes   []nvme.SQE
	hdrs   []byte // per slot: tcpSlotHdr bytes of CapsuleCmd header
	aux    []byte // per slot: 16-byte DSM area, 4-byte data digest
	iov    [][]byte
	wbuf   net.Buffers
	queued []uint16 // slots in the pending batch

	writeMu sync.Mutex // serialises socket writes: flush and the reader's H2CData
	zc      tcpZC      // zero-copy capsule sends (wire_tcp_zc.go), under writeMu

	slots []tcpSlot

	// ring hands responses from the reader to poll: slot indices, the
	// CQE in tcpSlot.cqe. rHead is written by the reader, rTail by poll.
	ring  []uint16
	rHead atomic.Uint32
	rTail atomic.Uint32
	sig   chan struct{} // capacity 1: "the ring is not empty"

	// Reader side.
	hdr    [tcppdu.TermReqHLen + tcppdu.MaxTermReqData + tcppdu.DigestSize]byte // fits every header
	hdrLen int                                                                  // bytes of hdr read (TermReq data)
	h2c    [tcppdu.DataHLen + tcppdu.DigestSize + tcppdu.MaxDataAlign]byte
	h2cDg  [tcppdu.DigestSize]byte
	dgst   [tcppdu.DigestSize]byte
	pad    [tcppdu.MaxDataAlign]byte
	h2ciov [][]byte
	h2cbuf net.Buffers

	done      chan struct{} // closed when the connection ended
	errOnce   sync.Once
	err       error // set before done closes
	exited    chan struct{}
	closeOnce sync.Once
}

// tcpSlot is one command slot's transfer state shared with the reader.
type tcpSlot struct {
	// state is 0 when the reader must not touch the slot, else
	// tcpArmed | CID.
	state  atomic.Uint32
	data   []byte // the command's data (owner writes before arming)
	toCtrl bool
	inCap  bool // data went in the capsule (no R2T may ask for it)
	// Reader-owned while armed.
	recvd uint32 // C2HData bytes received so far (in order)
	cqe   nvme.CQE
}

const tcpArmed = 1 << 16

// tcpSetup are the inputs to dialTCP.
type tcpSetup struct {
	addr      string
	qid       uint16
	depth     int
	digests   tcppdu.Digests
	inCapsule int // in-capsule data limit (admin: tcpAdminInCapsule)
	maxData   int // largest data transfer of one command
	zcMin     int // Options.ZeroCopySendMin (admin queue: 0, never)
}

// dialTCP connects one queue: TCP connect, ICReq / ICResp (TCP §3.6.2.2,
// §3.6.2.3) within ctx, then starts the reader. The fabrics Connect has
// not been sent.
func dialTCP(ctx context.Context, s tcpSetup) (*qpair, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, &RefusedError{Addr: s.addr, Err: err}
		}
		return nil, fmt.Errorf("initiator: queue %d: connect to %s: %w", s.qid, s.addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	resp, err := icExchange(conn, s.digests)
	stopped := stop()
	if err == nil && !stopped {
		err = ctx.Err()
	}
	if err == nil {
		err = conn.SetDeadline(time.Time{})
	}
	if err != nil {
		_ = conn.Close()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return nil, fmt.Errorf("initiator: queue %d: NVMe/TCP connection setup with %s: %w", s.qid, s.addr, err)
	}
	q := &qpair{qid: s.qid}
	w := newTCPWire(q, s.depth, conn, conn, tcppdu.Digests{Header: resp.DGST&tcppdu.DGSTHeader != 0, Data: resp.DGST&tcppdu.DGSTData != 0},
		tcppdu.PDAAlign(resp.CPDA), resp.MAXH2CDATA, s.inCapsule, s.maxData)
	w.conn = conn
	w.zc.init(conn, s.zcMin, cap(w.iov))
	watchParked(conn)
	go w.readLoop()
	return q, nil
}

// icExchange sends the ICReq (PFV 1.0, HPDA 0: no alignment asked of the
// controller, the digests wanted, MAXR2T 0: one R2T per command) and
// checks the ICResp: the digests granted must be the ones asked (as the
// Linux host).
func icExchange(conn net.Conn, dg tcppdu.Digests) (tcppdu.ICResp, error) {
	var b [tcppdu.ICReqHLen]byte
	tcppdu.ICReq{PFV: tcppdu.PFV10, DGST: dg.Bits()}.Marshal(b[:])
	if _, err := conn.Write(b[:]); err != nil {
		return tcppdu.ICResp{}, fmt.Errorf("send ICReq: %w", err)
	}
	if _, err := io.ReadFull(conn, b[:tcppdu.CommonHeaderSize]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return tcppdu.ICResp{}, fmt.Errorf("%w: the listener closed the connection instead of answering the ICReq (not an NVMe/TCP port? an RDMA listener wants -t rdma): %w", ErrProtocol, err)
		}
		return tcppdu.ICResp{}, fmt.Errorf("read ICResp: %w", err)
	}
	h, _ := tcppdu.ParseCommonHeader(b[:])
	if h.Type != tcppdu.TypeICResp || h.PLen != tcppdu.ICRespHLen {
		return tcppdu.ICResp{}, fmt.Errorf("%w: %s of %d bytes where an ICResp was expected (is this an NVMe/TCP port?)", ErrProtocol, tcppdu.TypeName(h.Type), h.PLen)
	}
	if _, err := io.ReadFull(conn, b[tcppdu.CommonHeaderSize:]); err != nil {
		return tcppdu.ICResp{}, fmt.Errorf("read ICResp: %w", err)
	}
	r, err := tcppdu.ParseICResp(b[:])
	if err != nil {
		return tcppdu.ICResp{}, fmt.Errorf("%w: ICResp: %w", ErrProtocol, err)
	}
	if r.DGST != dg.Bits() {
		return tcppdu.ICResp{}, fmt.Errorf("%w: digests asked %s, controller enabled %s", ErrNotSupported, digestNames(dg.Bits()), digestNames(r.DGST))
	}
	return r, nil
}

func digestNames(v uint8) string {
	switch v & (tcppdu.DGSTHeader | tcppdu.DGSTData) {
	case tcppdu.DGSTHeader:
		return "header"
	case tcppdu.DGSTData:
		return "data"
	case tcppdu.DGSTHeader | tcppdu.DGSTData:
		return "header+data"
	}
	return "none"
}

// newTCPWire builds the wire and q's slot table for depth commands
// reading r and writing wr (an established connection after ICResp).
func newTCPWire(q *qpair, depth int, r io.Reader, wr io.Writer, dg tcppdu.Digests, cpda int, maxH2C uint32, inCapsule, maxData int) *tcpWire {
	w := &tcpWire{
		q: q, br: bufio.NewReaderSize(r, tcpReadBuf), wr: wr,
		dg: dg, cpda: cpda, maxH2C: maxH2C, inCapsule: inCapsule, maxData: maxData,
		sqes: make([]nvme.SQE, depth), hdrs: make([]byte, depth*tcpSlotHdr), aux: make([]byte, depth*tcpAuxSize),
		iov: make([][]byte, 0, 3*depth), queued: make([]uint16, 0, depth),
		slots: make([]tcpSlot, depth), ring: make([]uint16, depth), sig: make(chan struct{}, 1),
		h2ciov: make([][]byte, 0, 3),
		done:   make(chan struct{}), exited: make(chan struct{}),
	}
	q.w = w
	q.initSlots(depth)
	return w
}

const tcpAuxSize = dsmAreaSize + tcppdu.DigestSize

func (w *tcpWire) sqe(i uint16) *nvme.SQE { return &w.sqes[i] }

func (w *tcpWire) dsmArea(i uint16) []byte {
	o := int(i) * tcpAuxSize
	return w.aux[o : o+dsmAreaSize : o+dsmAreaSize]
}

func (w *tcpWire) ddgst(i uint16) []byte {
	o := int(i)*tcpAuxSize + dsmAreaSize
	return w.aux[o : o+tcppdu.DigestSize : o+tcppdu.DigestSize]
}

// setTransportSGL sets SGL1 to a Transport SGL Data Block (type 5,
// subtype Ah) of n bytes: the data moves in C2HData or, after an R2T, in
// H2CData (TCP §3.3). n 0 is the "no data" descriptor.
func setTransportSGL(e *nvme.SQE, n int) {
	g := e.SGL1()
	g.SetDataBlock(0, uint32(n), nvme.SGLSubtypeTransport)
	g[15] = nvme.SGLTypeTransportBlock<<4 | nvme.SGLSubtypeTransport
}

// setData: host-to-controller data that fits the controller's in-capsule
// size goes in the capsule (any command, as the Linux host; the capsule
// flag matters only over RDMA), everything else is a Transport SGL Data
// Block.
func (w *tcpWire) setData(i uint16, e *nvme.SQE, b *Buffer, n int, toCtrl, capsule bool) {
	s := &w.slots[i]
	s.data, s.toCtrl, s.inCap = nil, toCtrl, false
	if n <= 0 {
		setTransportSGL(e, 0)
		return
	}
	if b == nil {
		s.data = w.dsmArea(i)[:n]
	} else {
		s.data = b.b[:n:n]
	}
	if toCtrl && n <= w.inCapsule {
		e.SGL1().SetDataBlock(0, uint32(n), nvme.SGLSubtypeOffset)
		s.inCap = true
		return
	}
	setTransportSGL(e, n)
}

// queueSend builds slot i's CapsuleCmd PDU (header, header digest,
// padding, in-capsule data and its digest) and arms the slot for the
// reader.
func (w *tcpWire) queueSend(i uint16) {
	s := &w.slots[i]
	h := w.hdrs[int(i)*tcpSlotHdr : (int(i)+1)*tcpSlotHdr]
	icd := 0
	if s.inCap {
		icd = len(s.data)
	}
	n := tcppdu.PutCapsuleCmd(h, &w.sqes[i], icd, w.dg, w.cpda)
	w.iov = append(w.iov, h[:n])
	w.zc.data += icd
	if icd > 0 {
		w.iov = append(w.iov, s.data)
		if w.dg.Data {
			d := w.ddgst(i)
			binary.LittleEndian.PutUint32(d, tcppdu.Digest(s.data))
			w.iov = append(w.iov, d)
		}
	}
	s.recvd = 0
	s.state.Store(tcpArmed | uint32(w.sqes[i].CID()))
	w.queued = append(w.queued, i)
}

func (w *tcpWire) pending() int { return len(w.queued) }

// flush writes the pending capsules with one vectored write. The write
// lock is released before a failure is reported (fail loses the
// controller, which waits for the reader, which may need the lock).
func (w *tcpWire) flush() error {
	if len(w.queued) == 0 {
		return nil
	}
	var err error
	w.writeMu.Lock()
	if w.zc.use() {
		err = w.zc.write(w.iov)
	} else {
		w.wbuf = w.iov
		_, err = w.wbuf.WriteTo(w.wr)
	}
	w.writeMu.Unlock()
	w.zc.data = 0
	clear(w.iov)
	w.iov = w.iov[:0]
	if err != nil {
		w.queued = w.queued[:0]
		w.q.fail(fmt.Errorf("%w: queue %d: send: %w", ErrControllerLost, w.q.qid, err))
		return w.q.err
	}
	for _, i := range w.queued {
		w.q.sendDone(uint64(i))
		if w.q.err != nil {
			break
		}
	}
	w.queued = w.queued[:0]
	return nil
}

// poll hands the responses the reader queued to the qpair.
func (w *tcpWire) poll() int {
	q := w.q
	if q.err != nil {
		return 0
	}
	n := 0
	tail := w.rTail.Load()
	head := w.rHead.Load()
	for tail != head {
		i := w.ring[tail%uint32(len(w.ring))]
		cqe := w.slots[i].cqe
		tail++
		w.rTail.Store(tail)
		n++
		if !q.response(&cqe) {
			return n
		}
	}
	if n == 0 {
		// The connection ended and every response it brought is
		// handled: the queue is dead (RDMA: a flush error completion).
		select {
		case <-w.done:
			q.fail(w.err)
		default:
		}
	}
	return n
}

// arm: the reader signals sig after every response it queues.
func (w *tcpWire) arm() error { return nil }

func (w *tcpWire) notify() <-chan struct{} { return w.sig }

// fdNotifier: none — arrivals come from the connection's reader goroutine.
func (w *tcpWire) fdNotifier() verbs.FDNotifier { return nil }

func (w *tcpWire) connDone() <-chan struct{} { return w.done }

func (w *tcpWire) connErr() error {
	select {
	case <-w.done:
		return w.err
	default:
		return nil
	}
}

// end records why the connection ended and closes done (once).
func (w *tcpWire) end(err error) {
	w.errOnce.Do(func() {
		w.err = err
		close(w.done)
	})
}

// disconnect closes the socket and waits for the reader to leave, so
// that no C2HData lands in host memory afterwards. Any goroutine except
// the reader.
func (w *tcpWire) disconnect() {
	w.closeOnce.Do(func() {
		if w.conn != nil {
			w.zc.abort(w.conn)
			_ = w.conn.Close()
		}
	})
	if w.conn != nil {
		<-w.exited
	}
}

func (w *tcpWire) destroy() error {
	w.disconnect()
	w.end(ErrClosed)
	w.writeMu.Lock()
	w.zc.close()
	w.writeMu.Unlock()
	return nil
}

// watchParked puts the queue's socket in the process's parked set
// (internal/nbsys), so that an NVMe/TCP target reader spinning in the same
// process (a replica leg's owner) stops for this queue's responses.
func watchParked(conn net.Conn) {
	if sc, ok := conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = nbsys.WatchParked(int(fd), nbsys.ParkedIn) })
		}
	}
}
