package tcp

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// The send path. Every PDU after ICResp — R2T, C2HData + CapsuleResp, the
// final C2HTermReq — is a job appended to the connection's pending list
// (post). The goroutine that posts a job when no write is under way takes
// the write token and writes what is pending itself: the backend's
// completion goroutine or a pool worker for its completion, the reader
// for what it produced in a batch (inline completions, completions of
// I/O reaped inside the core's EndBatch, R2Ts) once the batch ends. Jobs
// posted while a write is under way, or while the reader is in a batch,
// only join the list: the token holder (or the reader, when its batch
// ends) writes them next, so a burst of completions costs one write and
// no goroutine wake-up.
//
// A write takes up to maxBatch jobs: their small PDUs (C2HData headers,
// CapsuleResps, R2Ts, digests) are packed into one buffer and sent with
// the read data in one writev. Only the connection's writer goroutine
// blocks on the socket: the token holder writes without blocking, and
// when the socket is full (a host that does not read) it passes the token
// with the unwritten rest to the writer goroutine, which finishes it and
// goes on writing until nothing is pending. So neither the reader (which
// must go on reading: a host may stop reading while it writes) nor a
// backend goroutine ever waits for a host.
//
// Slots: a response's slot is freed once the whole write that carries it
// is out. The host may see the CQE earlier (and send a new command for
// that queue entry), so a connection has maxBatch slots beyond its queue
// entries, and the reader counts a host's outstanding commands as busy
// slots minus those whose response is in the write under way (inWrite).
//
// C2HData SUCCESS (TCP §3.6.2.8) would spare the CapsuleResp of a
// successful read, but a controller may set it only while SQ flow control
// is disabled (Connect CATTR bit 2 granted, SQHD 0xFFFF): otherwise the
// host needs each CQE's SQHD. The core keeps SQ flow control on for every
// queue, so SUCCESS is never set (nvmet-tcp has the same rule).

const (
	// maxBatch is the most jobs one write carries, and the spare slots of
	// a connection (see above; fewer for a queue of more than 65,504
	// entries: slot indices are 16-bit TTAGs).
	maxBatch = 32
	// jobBytes bounds the small PDU bytes of one job: a C2HData header
	// padded to the host's PDA (≤ 128), a data digest, a CapsuleResp with
	// its header digest; or an R2T; or a C2HTermReq (≤ 152).
	jobBytes = tcppdu.MaxDataAlign + tcppdu.DigestSize + tcppdu.CapsuleRespHLen + tcppdu.DigestSize + 64
	// maxFlushRounds is how many writes a goroutine other than the
	// writer does before it leaves the rest to the writer goroutine, so
	// that a backend's completion goroutine (shared by many connections)
	// or the reader is not kept writing by a stream of completions; 4
	// writes carry the responses of a full default queue (128).
	maxFlushRounds = 4
	// maxBatchBytes bounds what the reader reads in one batch (see
	// sockReader): a host streaming write data does not hold back the
	// responses the batch defers for longer than this takes to read.
	maxBatchBytes = 256 << 10
)

// jobKind is what a job sends.
type jobKind uint8

const (
	jobResp jobKind = iota // C2HData (reads) and CapsuleResp of slot idx
	jobR2T                 // R2T for slot idx
	jobTerm                // C2HTermReq (or none: a drain's last flush), then stop
)

type job struct {
	kind jobKind
	idx  uint16
	// R2T: the command and length (copied: the send path does not read
	// the slot, which the reader owns meanwhile).
	cid    uint16
	length uint32
	// Term: the error (nil: none) and (a copy of) the header in error.
	term    *tcppdu.Error
	termHdr []byte
}

// sendState is the send path's state. mu guards the fields above it;
// the fields below it belong to the goroutine holding the write token
// (writing set), handed over with the token.
type sendState struct {
	mu   sync.Mutex
	pend []job // posted, not yet taken by a write
	// writing: a goroutine holds the write token.
	writing bool
	// deferred: the reader is in a batch and writes what is pending when
	// it ends (before it can block on a read).
	deferred bool
	// stopped: the TermReq was written or a write failed; later jobs are
	// dropped (their slots freed).
	stopped bool

	batch []job    // jobs of the write under way
	out   []byte   // their small PDUs
	bufs  [][]byte // the write: runs of out and read data, in order
	// partial: the write under way was cut short by a full socket; the
	// writer goroutine finishes it.
	partial bool
	sock    sockWriter
	// zcSlots: scratch for the slots a zero-copy write holds (endWrite).
	zcSlots []uint16
}

// post queues j and, unless a write is under way or the reader will
// write at the end of its batch, writes what is pending now. Any
// goroutine; it never blocks on the socket.
func (c *conn) post(j job) {
	w := &c.snd
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		c.drop(j)
		return
	}
	w.pend = append(w.pend, j)
	if w.writing || w.deferred {
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	c.flush(false)
}

// deferWrites makes the reader's posts (and others') wait for
// undeferWrites: the reader begins a batch. Reader only.
func (c *conn) deferWrites() {
	w := &c.snd
	w.mu.Lock()
	w.deferred = true
	w.mu.Unlock()
}

// undeferWrites ends the deferral and writes what is pending unless a
// write is under way (whose holder then writes it). Reader only; it does
// not block on the socket.
func (c *conn) undeferWrites() {
	w := &c.snd
	w.mu.Lock()
	w.deferred = false
	if w.writing || len(w.pend) == 0 {
		w.mu.Unlock()
		return
	}
	w.writing = true
	w.mu.Unlock()
	c.flush(false)
}

// flush writes pending jobs, a batch at a time, until none is left; the
// caller holds the write token, which flush releases or, when the socket
// is full or it has written maxFlushRounds batches (wait false), passes
// to the writer goroutine. With wait (the writer goroutine, or the
// reader's last flush) it blocks until the socket takes the data.
func (c *conn) flush(wait bool) {
	w := &c.snd
	for round := 0; ; round++ {
		w.mu.Lock()
		if w.stopped || len(w.pend) == 0 {
			drop := w.stopped
			w.writing = false
			w.mu.Unlock()
			if drop {
				c.dropPending()
			}
			return
		}
		if !wait && round == maxFlushRounds {
			w.mu.Unlock()
			c.kickWriter()
			return
		}
		k := 0
		for k < len(w.pend) && k < c.spare {
			k++
			if w.pend[k-1].kind == jobTerm {
				break
			}
		}
		w.batch = append(w.batch[:0], w.pend[:k]...)
		n := copy(w.pend, w.pend[k:])
		clear(w.pend[n:])
		w.pend = w.pend[:n]
		w.mu.Unlock()

		data := c.build()
		done, err := w.sock.write(w.bufs, wait, c.zeroCopy(data))
		if err == nil && !done {
			// The socket is full: the writer goroutine finishes this
			// write and goes on.
			w.partial = true
			c.kickWriter()
			return
		}
		c.endWrite(err)
	}
}

// writer is the connection's writer goroutine: it does the writes that
// would block (a full socket, see flush) and the writes past
// maxFlushRounds. It runs when the token is passed to it and exits when
// the connection is done.
func (c *conn) writer() {
	defer close(c.wdone)
	w := &c.snd
	for {
		select {
		case <-c.kick:
		case <-c.done:
			return
		}
		if w.partial {
			w.partial = false
			_, err := w.sock.write(nil, true, false)
			c.endWrite(err)
		}
		c.flush(true)
	}
}

// kickWriter passes the write token to the writer goroutine. Only the
// token holder calls it, once, so the channel (capacity 1) never blocks.
func (c *conn) kickWriter() {
	c.l.stats.writerHandoffs.Add(1)
	c.kick <- struct{}{}
}

// build packs the batch's small PDUs into out and lays the write out in
// bufs: runs of out between the read data it carries. It marks the
// batch's responses as in the write under way (inWrite) before any of
// their CQEs can leave, and returns the bytes of read data the write
// carries. Token holder only.
func (c *conn) build() int {
	w := &c.snd
	out, bufs := w.out[:0], w.bufs[:0]
	mark := 0 // start of the run of out not yet in bufs
	resps, nData := 0, 0
	for _, j := range w.batch {
		b := out[len(out):cap(out)]
		n := 0
		switch j.kind {
		case jobR2T:
			n = tcppdu.PutR2T(b, tcppdu.DataHeader{CCCID: j.cid, TTAG: j.idx, DATAO: 0, DATAL: j.length}, c.dg)
		case jobTerm:
			if j.term != nil {
				n = tcppdu.PutTermReq(b, tcppdu.TypeC2HTermReq, j.term, j.termHdr)
			}
		case jobResp:
			resps++
			r := &c.slots[j.idx].req
			if r.Dir == nvme.DirCtrlToHost && r.Length > 0 && r.CQE.Status() == nvme.StatusSuccess {
				nData += int(r.Length)
				data := r.Data[:r.Length]
				n = tcppdu.PutData(b, tcppdu.TypeC2HData,
					tcppdu.DataHeader{CCCID: r.SQE.CID(), DATAL: r.Length}, tcppdu.FlagLastPDU, c.dg, c.hostAlign)
				out = out[:len(out)+n]
				bufs = append(bufs, out[mark:], data)
				mark = len(out)
				if c.dg.Data {
					out = binary.LittleEndian.AppendUint32(out, tcppdu.Digest(data))
				}
				b, n = out[len(out):cap(out)], 0
			}
			n += tcppdu.PutCapsuleResp(b, &r.CQE, c.dg)
		}
		out = out[:len(out)+n]
	}
	if len(out) > mark {
		bufs = append(bufs, out[mark:])
	}
	w.out, w.bufs = out, bufs
	c.inWrite.Store(int32(resps))
	return nData
}

// endWrite finishes the write of the batch (err: it failed): the slots of
// its responses go back to the free list — after the write, so no slot
// is reused while the socket may still read its data — and a TermReq (or
// a failure) stops the send path. Token holder only.
func (c *conn) endWrite(err error) {
	w := &c.snd
	c.l.stats.writes.Add(w.sock.calls)
	w.sock.calls = 0
	stop := err != nil
	held := false
	if id := w.sock.zcRec; id != 0 {
		// Bytes of this write went out zero-copy: its slots and small
		// PDUs stay untouched until the kernel's notices are in.
		w.sock.zcRec = 0
		held = c.zcHold(id)
	}
	for _, j := range w.batch {
		switch j.kind {
		case jobResp:
			if !held {
				c.release(j.idx)
			}
		case jobTerm:
			stop = true
		}
	}
	c.inWrite.Store(0)
	clear(w.batch)
	w.batch = w.batch[:0]
	clear(w.bufs)
	select {
	case c.freed <- struct{}{}:
	default:
	}
	if err != nil {
		// The reader stops too. Not here: the token holder may be the
		// reader inside its read callback (sockReader.read ending a
		// batch), which holds a reference on the descriptor that Close
		// waits for.
		go c.closeConn()
	}
	if stop {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		c.wstopOnce.Do(func() { close(c.wstop) })
	}
}

// release returns slot idx, whose response was written or dropped, to
// the free list.
func (c *conn) release(idx uint16) {
	if isAER(c, &c.slots[idx].req.SQE) {
		c.heldAER.Add(-1)
	}
	c.free.push(idx)
}

// drop discards a job posted after the send path stopped: its slot is
// freed (nothing will be written any more).
func (c *conn) drop(j job) {
	if j.kind == jobResp {
		c.release(j.idx)
		select {
		case c.freed <- struct{}{}:
		default:
		}
	}
}

// dropPending discards every pending job once the send path stopped.
// Token holder (which releases the token just before).
func (c *conn) dropPending() {
	w := &c.snd
	for {
		w.mu.Lock()
		if len(w.pend) == 0 {
			w.mu.Unlock()
			return
		}
		j := w.pend[len(w.pend)-1]
		w.pend[len(w.pend)-1] = job{}
		w.pend = w.pend[:len(w.pend)-1]
		w.mu.Unlock()
		c.drop(j)
	}
}

// stopWriter has everything pending written, then the C2HTermReq for e
// (none when nil), and stops the send path; it waits for that, bounded
// by termWriteTimeout (a write deadline). Reader only, as it ends.
func (c *conn) stopWriter(e *tcppdu.Error) {
	_ = c.nc.SetWriteDeadline(time.Now().Add(termWriteTimeout))
	j := job{kind: jobTerm, term: e}
	if e != nil {
		j.termHdr = append([]byte(nil), c.hdr[:min(c.hdrN, tcppdu.MaxTermReqData)]...)
	}
	w := &c.snd
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.deferred = false
	w.pend = append(w.pend, j)
	if w.writing {
		w.mu.Unlock()
	} else {
		w.writing = true
		w.mu.Unlock()
		c.flush(true) // the reader is ending: it may block (bounded)
	}
	<-c.wstop
}
