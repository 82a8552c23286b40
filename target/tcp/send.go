package tcp

import (
	"encoding/binary"
	"net"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// writer is the connection's only writer after ICResp: R2Ts, C2HData,
// CapsuleResps and a final C2HTermReq, in the order they were queued;
// small PDUs queued back to back leave in one write. It
// returns a response's slot to the free list after the data went out and
// before the CapsuleResp does, so the host can never send a command for
// which no slot is free. It exits when the connection is done, a write
// fails (closing the socket, which ends the reader) or after a TermReq.
//
// C2HData SUCCESS (TCP §3.6.2.8) would spare the CapsuleResp of a
// successful read, but a controller may set it only while SQ flow control
// is disabled (Connect CATTR bit 2 granted, SQHD 0xFFFF): otherwise the
// host needs each CQE's SQHD. The core keeps SQ flow control on for every
// queue, so SUCCESS is never set (nvmet-tcp has the same rule).
func (c *conn) writer() {
	defer close(c.wdone)
	var hdr [tcppdu.MaxDataAlign + tcppdu.ICReqHLen + tcppdu.MaxTermReqData]byte
	var ddgst [tcppdu.DigestSize]byte
	var iov [4][]byte
	var nb net.Buffers // reused: a local one passed by pointer would escape
	// out holds small PDUs (R2T, CapsuleResp) not yet written: they go
	// out together when no job is waiting, before data, or when it fills,
	// one write for a burst of completions.
	out := make([]byte, 0, writeCoalesce+256)
	for {
		var j job
		select {
		case j = <-c.sendq:
		case <-c.done:
			return
		}
		var err error
		switch j.kind {
		case jobR2T:
			n := tcppdu.PutR2T(hdr[:], tcppdu.DataHeader{CCCID: j.cid, TTAG: j.idx, DATAO: 0, DATAL: j.length}, c.dg)
			out = append(out, hdr[:n]...)
		case jobTerm:
			// The last job: a C2HTermReq, or (nil) just the flush of
			// what a drain left.
			if j.term != nil {
				n := tcppdu.PutTermReq(hdr[:], tcppdu.TypeC2HTermReq, j.term, j.termHdr)
				out = append(out, hdr[:n]...)
			}
			if len(out) > 0 {
				_, _ = c.nc.Write(out)
			}
			return
		case jobResp:
			s := &c.slots[j.idx]
			r := &s.req
			if r.Dir == nvme.DirCtrlToHost && r.Length > 0 && r.CQE.Status() == nvme.StatusSuccess {
				data := r.Data[:r.Length]
				n := tcppdu.PutData(hdr[:], tcppdu.TypeC2HData,
					tcppdu.DataHeader{CCCID: r.SQE.CID(), DATAL: r.Length}, tcppdu.FlagLastPDU, c.dg, c.hostAlign)
				nb = iov[:0]
				if len(out) > 0 {
					nb = append(nb, out)
				}
				nb = append(nb, hdr[:n], data)
				if c.dg.Data {
					binary.LittleEndian.PutUint32(ddgst[:], tcppdu.Digest(data))
					nb = append(nb, ddgst[:])
				}
				_, err = nb.WriteTo(c.nc)
				c.l.stats.writes.Add(1)
				out = out[:0]
			}
			// The slot is free once its data is out, before its CQE.
			cqe := r.CQE
			if isAER(c, &r.SQE) {
				c.heldAER.Add(-1)
			}
			c.free.push(j.idx)
			select {
			case c.freed <- struct{}{}:
			default:
			}
			n := tcppdu.PutCapsuleResp(hdr[:], &cqe, c.dg)
			out = append(out, hdr[:n]...)
		}
		if err == nil && len(out) > 0 && (len(c.sendq) == 0 || len(out) >= writeCoalesce) {
			_, err = c.nc.Write(out)
			c.l.stats.writes.Add(1)
			out = out[:0]
		}
		if err != nil {
			c.closeConn()
			return
		}
	}
}

// writeCoalesce is how many bytes of small PDUs the writer gathers before
// it writes them even though more jobs wait.
const writeCoalesce = 16 << 10
