package initiator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// readLoop is the connection's reader goroutine: it reads PDUs until the
// connection ends or the controller breaks the protocol, then ends the
// wire (fail).
func (w *tcpWire) readLoop() {
	defer close(w.exited)
	for {
		if err := w.readPDU(); err != nil {
			w.fail(err)
			return
		}
	}
}

// fail ends the connection because of err: an H2CTermReq first when the
// controller sent a malformed PDU (TCP §3.6.2.4; best effort, bounded),
// then close; connDone closes with err. Reader goroutine only.
func (w *tcpWire) fail(err error) {
	var pe *tcppdu.Error
	if errors.As(err, &pe) {
		var b [tcppdu.TermReqHLen + tcppdu.MaxTermReqData]byte
		n := tcppdu.PutTermReq(b[:], tcppdu.TypeH2CTermReq, pe, w.hdr[:w.hdrLen])
		if w.conn != nil {
			_ = w.conn.SetWriteDeadline(time.Now().Add(tcpTermWait))
		}
		w.writeMu.Lock()
		_, _ = w.wr.Write(b[:n])
		w.writeMu.Unlock()
	}
	w.closeOnce.Do(func() {
		if w.conn != nil {
			_ = w.conn.Close()
		}
	})
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("connection closed by the controller: %w", err)
	}
	if errors.As(err, &pe) || errors.Is(err, errTCPProtocol) {
		err = fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	w.end(fmt.Errorf("%w: queue %d: nvme/tcp: %w", ErrControllerLost, w.q.qid, err))
	select {
	case w.sig <- struct{}{}:
	default:
	}
}

// errTCPProtocol marks protocol errors that have no FES (no TermReq): a
// CID that names no outstanding command, a data digest error, a TermReq
// from the controller.
var errTCPProtocol = errors.New("protocol violation")

func protoErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errTCPProtocol}, a...)...)
}

// readPDU reads and handles one PDU from the controller. Every length is
// checked by tcppdu.Frame before anything is read into host memory; data
// goes only into the buffer of an outstanding command, inside its
// length. Reader goroutine only.
func (w *tcpWire) readPDU() error {
	w.hdrLen = 0
	hb := w.hdr[:]
	// p: the bytes the read buffer holds. When they include the common
	// header (in a batch of responses, the whole PDU) the header is
	// copied out of them rather than read, and left there until
	// tcppdu.HeaderRest.
	p := tcppdu.Buffered(w.br)
	if len(p) >= tcppdu.CommonHeaderSize {
		copy(hb[:tcppdu.CommonHeaderSize], p)
	} else if _, err := io.ReadFull(w.br, hb[:tcppdu.CommonHeaderSize]); err != nil {
		return err
	}
	w.hdrLen = tcppdu.CommonHeaderSize
	ch, _ := tcppdu.ParseCommonHeader(hb)
	f, err := ch.Frame(tcppdu.Limits{Digests: w.dg, Align: 4, MaxData: w.maxData})
	if err != nil {
		return err
	}
	switch f.Type {
	case tcppdu.TypeCapsuleResp, tcppdu.TypeC2HData, tcppdu.TypeR2T, tcppdu.TypeC2HTermReq:
	default:
		return &tcppdu.Error{FES: tcppdu.FESPDUSequenceError, Reason: fmt.Sprintf("%s from the controller", tcppdu.TypeName(f.Type))}
	}
	if f.HeaderLen > len(hb) {
		return &tcppdu.Error{FES: tcppdu.FESInvalidHeaderField, Reason: fmt.Sprintf("%s header of %d bytes", tcppdu.TypeName(f.Type), f.HeaderLen)}
	}
	if !tcppdu.HeaderRest(w.br, p, hb[:f.HeaderLen]) {
		if _, err := io.ReadFull(w.br, hb[tcppdu.CommonHeaderSize:f.HeaderLen]); err != nil {
			return err
		}
	}
	w.hdrLen = f.HeaderLen
	if f.HeaderDigest {
		if err := tcppdu.CheckHeaderDigest(hb[:f.HeaderLen], int(f.HLen)); err != nil {
			return err
		}
	}
	switch f.Type {
	case tcppdu.TypeCapsuleResp:
		cqe, _ := tcppdu.ParseCapsuleResp(hb[:f.HeaderLen])
		return w.deliver(&cqe)
	case tcppdu.TypeC2HData:
		return w.readC2HData(f)
	case tcppdu.TypeR2T:
		return w.answerR2T(f)
	default: // C2HTermReq
		end := max(f.HeaderLen, f.DataOff+f.DataLen)
		if end > len(hb) {
			return protoErr("C2HTermReq of %d bytes", end)
		}
		if err := tcppdu.ReadFull(w.br, hb[f.HeaderLen:end]); err != nil {
			return err
		}
		tr, err := tcppdu.ParseTermReq(hb[:end], f)
		if err != nil {
			return protoErr("malformed C2HTermReq")
		}
		// The controller ends the connection: answer nothing.
		w.hdrLen = 0
		return protoErr("controller terminated the connection (C2HTermReq: %s, FEI %d)", tcppdu.FESName(tr.FES), tr.FEI)
	}
}

// armed returns the slot of an outstanding command with this CID, or an
// error.
func (w *tcpWire) armed(cid uint16, what string) (*tcpSlot, uint16, error) {
	i := cid & w.q.slotMask
	if int(i) < len(w.slots) {
		s := &w.slots[i]
		if s.state.Load() == tcpArmed|uint32(cid) {
			return s, i, nil
		}
	}
	return nil, 0, protoErr("%s for CID %#x that is not outstanding", what, cid)
}

// deliver hands a command's response to the owner: disarm the slot, queue
// its index on the ring, signal.
func (w *tcpWire) deliver(cqe *nvme.CQE) error {
	cid := cqe.CID()
	s, i, err := w.armed(cid, "response")
	if err != nil {
		return err
	}
	if !s.state.CompareAndSwap(tcpArmed|uint32(cid), 0) {
		return protoErr("response for CID %#x that is not outstanding", cid)
	}
	s.cqe = *cqe
	head := w.rHead.Load()
	if head-w.rTail.Load() >= uint32(len(w.ring)) {
		return protoErr("more responses than commands")
	}
	w.ring[head%uint32(len(w.ring))] = i
	w.rHead.Store(head + 1)
	select {
	case w.sig <- struct{}{}:
	default:
	}
	return nil
}

// readC2HData reads controller-to-host data into the command's buffer, in
// order and inside the command's length, and checks its digest. With
// SUCCESS the PDU also completes the command (TCP §3.6.2.8).
func (w *tcpWire) readC2HData(f tcppdu.Frame) error {
	d, err := tcppdu.ParseData(w.hdr[:f.HeaderLen], f)
	if err != nil {
		return err
	}
	s, _, err := w.armed(d.CCCID, "C2HData")
	if err != nil {
		return err
	}
	if s.toCtrl || len(s.data) == 0 {
		return protoErr("C2HData for CID %#x, a command without controller-to-host data", d.CCCID)
	}
	if err := d.InWindow(0, uint32(len(s.data))); err != nil {
		return err
	}
	if d.DATAO != s.recvd {
		return &tcppdu.Error{FES: tcppdu.FESDataOutOfRange, FEI: 0,
			Reason: fmt.Sprintf("C2HData for CID %#x at offset %d, expected %d", d.CCCID, d.DATAO, s.recvd)}
	}
	if pad := f.DataOff - f.HeaderLen; pad > 0 {
		if err := tcppdu.ReadFull(w.br, w.pad[:pad]); err != nil {
			return err
		}
	}
	dst := s.data[d.DATAO : d.DATAO+d.DATAL]
	if err := tcppdu.ReadFull(w.br, dst); err != nil {
		return err
	}
	if f.DataDigest {
		if err := tcppdu.ReadFull(w.br, w.dgst[:]); err != nil {
			return err
		}
		if got, want := binary.LittleEndian.Uint32(w.dgst[:]), tcppdu.Digest(dst); got != want {
			return protoErr("C2HData for CID %#x: data digest %#08x, computed %#08x", d.CCCID, got, want)
		}
	}
	s.recvd += d.DATAL
	if f.Flags&tcppdu.FlagSuccess != 0 {
		if s.recvd != uint32(len(s.data)) {
			return protoErr("C2HData SUCCESS for CID %#x after %d of %d bytes", d.CCCID, s.recvd, len(s.data))
		}
		var cqe nvme.CQE
		cqe.SetCID(d.CCCID)
		return w.deliver(&cqe)
	}
	return nil
}

// answerR2T sends the data an R2T asks for in H2CData PDUs of at most
// MAXH2CDATA bytes (TCP §3.6.2.7, §3.6.2.10), from the command's buffer.
func (w *tcpWire) answerR2T(f tcppdu.Frame) error {
	d, err := tcppdu.ParseData(w.hdr[:f.HeaderLen], f)
	if err != nil {
		return err
	}
	s, _, err := w.armed(d.CCCID, "R2T")
	if err != nil {
		return err
	}
	if !s.toCtrl || s.inCap || len(s.data) == 0 {
		return protoErr("R2T for CID %#x, a command without host-to-controller data to transfer", d.CCCID)
	}
	if err := d.InWindow(0, uint32(len(s.data))); err != nil {
		return err
	}
	end := d.DATAO + d.DATAL
	for off := d.DATAO; off < end; {
		n := min(end-off, w.maxH2C)
		var flags uint8
		if off+n == end {
			flags = tcppdu.FlagLastPDU
		}
		data := s.data[off : off+n]
		pdo := tcppdu.PutData(w.h2c[:], tcppdu.TypeH2CData, tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAO: off, DATAL: n}, flags, w.dg, w.cpda)
		w.h2ciov = append(w.h2ciov[:0], w.h2c[:pdo], data)
		if w.dg.Data {
			binary.LittleEndian.PutUint32(w.h2cDg[:], tcppdu.Digest(data))
			w.h2ciov = append(w.h2ciov, w.h2cDg[:])
		}
		w.writeMu.Lock()
		w.h2cbuf = w.h2ciov
		_, err := w.h2cbuf.WriteTo(w.wr)
		w.writeMu.Unlock()
		if err != nil {
			w.hdrLen = 0
			return fmt.Errorf("send H2CData: %w", err)
		}
		off += n
	}
	return nil
}
