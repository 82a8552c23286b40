package tcp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// testHost is a raw NVMe/TCP host for tests: it builds every PDU itself
// so tests can send well-formed and malformed ones. One test goroutine
// drives it. Every read has a deadline: a target that hangs fails the
// test instead of hanging it.
type testHost struct {
	t   testing.TB
	nc  net.Conn
	br  *bufio.Reader
	dg  tcppdu.Digests
	icr tcppdu.ICResp
	// icd is the most data the host puts in a capsule (else R2T).
	icd   int
	align int // the HPDA asked for, in bytes (C2HData PDO alignment)
	// split, when set, cuts every write into pieces of 1 to 97 bytes,
	// each its own send with a yield between, so that the target's reads
	// end anywhere inside a PDU.
	split  *rand.Rand
	cid    uint16
	sqid   uint16
	cntlid uint16
}

const hostTimeout = 20 * time.Second

// dialRaw connects without the ICReq exchange.
func dialRaw(t testing.TB, addr string) *testHost {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, hostTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(hostTimeout))
	return &testHost{t: t, nc: nc, br: bufio.NewReader(nc), icd: 8192}
}

// dial connects and exchanges ICReq / ICResp asking for digests dg.
func dial(t testing.TB, addr string, dg tcppdu.Digests) *testHost {
	t.Helper()
	return dialHPDA(t, addr, dg, 0)
}

// dialHPDA is dial asking for C2HData aligned to (hpda+1)*4 bytes.
func dialHPDA(t testing.TB, addr string, dg tcppdu.Digests, hpda uint8) *testHost {
	t.Helper()
	h := dialRaw(t, addr)
	h.align = tcppdu.PDAAlign(hpda)
	var b [128]byte
	tcppdu.ICReq{DGST: dg.Bits(), HPDA: hpda}.Marshal(b[:])
	h.write(b[:])
	if _, err := io.ReadFull(h.br, b[:]); err != nil {
		t.Fatalf("reading ICResp: %v", err)
	}
	r, err := tcppdu.ParseICResp(b[:])
	if err != nil {
		t.Fatalf("ICResp: %v", err)
	}
	if r.DGST != dg.Bits() || r.CPDA != 0 {
		t.Fatalf("ICResp %+v, asked DGST %#x", r, dg.Bits())
	}
	h.icr, h.dg = r, dg
	return h
}

func (h *testHost) write(b ...[]byte) {
	h.t.Helper()
	if h.split != nil {
		for _, p := range b {
			for len(p) > 0 {
				n := min(1+h.split.IntN(97), len(p))
				if _, err := h.nc.Write(p[:n]); err != nil {
					h.t.Fatalf("write: %v", err)
				}
				p = p[n:]
				runtime.Gosched()
			}
		}
		return
	}
	nb := net.Buffers(b)
	if _, err := nb.WriteTo(h.nc); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

// pdu is one PDU received by the host.
type pdu struct {
	f    tcppdu.Frame
	hdr  []byte
	data []byte
}

// readPDU reads one PDU from the target, checking its framing and
// digests as a host must.
func (h *testHost) readPDU() (pdu, error) {
	var p pdu
	hdr := make([]byte, 8, 256)
	if _, err := io.ReadFull(h.br, hdr); err != nil {
		return p, err
	}
	ch, _ := tcppdu.ParseCommonHeader(hdr)
	dg := h.dg
	f, err := ch.Frame(tcppdu.Limits{Digests: dg, Align: h.align, MaxData: 16 << 20})
	if err != nil {
		return p, fmt.Errorf("target sent a bad PDU: %w", err)
	}
	hdr = hdr[:f.HeaderLen]
	if _, err := io.ReadFull(h.br, hdr[8:]); err != nil {
		return p, err
	}
	if f.HeaderDigest {
		if err := tcppdu.CheckHeaderDigest(hdr, int(ch.HLen)); err != nil {
			return p, err
		}
	}
	p.f, p.hdr = f, hdr
	if f.DataLen > 0 {
		if _, err := h.br.Discard(f.DataOff - f.HeaderLen); err != nil {
			return p, err
		}
		p.data = make([]byte, f.DataLen)
		if _, err := io.ReadFull(h.br, p.data); err != nil {
			return p, err
		}
		if f.DataDigest {
			var d [4]byte
			if _, err := io.ReadFull(h.br, d[:]); err != nil {
				return p, err
			}
			if binary.LittleEndian.Uint32(d[:]) != tcppdu.Digest(p.data) {
				return p, errors.New("target sent a bad data digest")
			}
		}
	}
	return p, nil
}

func (h *testHost) mustPDU() pdu {
	h.t.Helper()
	p, err := h.readPDU()
	if err != nil {
		h.t.Fatalf("reading PDU: %v", err)
	}
	return p
}

// setTransportSGL describes n bytes of data moved by R2T / C2HData.
func setTransportSGL(s *nvme.SQE, n uint32) {
	g := s.SGL1()
	clear(g[:])
	binary.LittleEndian.PutUint32(g[8:], n)
	g[15] = nvme.SGLTypeTransportBlock<<4 | nvme.SGLSubtypeTransport
}

// sendCapsule sends sqe with in-capsule data icd (may be empty).
func (h *testHost) sendCapsule(sqe *nvme.SQE, icd []byte) {
	h.t.Helper()
	b := make([]byte, 256)
	n := tcppdu.PutCapsuleCmd(b, sqe, len(icd), h.dg, 0)
	bufs := [][]byte{b[:n]}
	if len(icd) > 0 {
		bufs = append(bufs, icd)
		if h.dg.Data {
			bufs = append(bufs, binary.LittleEndian.AppendUint32(nil, tcppdu.Digest(icd)))
		}
	}
	h.write(bufs...)
}

// sendH2C sends one H2CData PDU.
func (h *testHost) sendH2C(d tcppdu.DataHeader, flags uint8, data []byte) {
	h.t.Helper()
	b := make([]byte, 256)
	d.DATAL = uint32(len(data))
	n := tcppdu.PutData(b, tcppdu.TypeH2CData, d, flags, h.dg, 0)
	bufs := [][]byte{b[:n], data}
	if h.dg.Data {
		bufs = append(bufs, binary.LittleEndian.AppendUint32(nil, tcppdu.Digest(data)))
	}
	h.write(bufs...)
}

// do runs one command: w is host-to-controller data (in the capsule up to
// h.icd bytes, else by R2T in H2CData PDUs of MAXH2CDATA), readLen the
// controller-to-host data expected. It returns the CQE and the data.
func (h *testHost) do(sqe *nvme.SQE, w []byte, readLen int) (nvme.CQE, []byte) {
	h.t.Helper()
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	var icd []byte
	switch {
	case w != nil && len(w) <= h.icd:
		sqe.SGL1().SetDataBlock(0, uint32(len(w)), nvme.SGLSubtypeOffset)
		icd = w
	case w != nil:
		setTransportSGL(sqe, uint32(len(w)))
	default:
		setTransportSGL(sqe, uint32(readLen))
	}
	h.sendCapsule(sqe, icd)
	var got []byte
	for {
		p := h.mustPDU()
		switch p.f.Type {
		case tcppdu.TypeR2T:
			d, err := tcppdu.ParseData(p.hdr, p.f)
			if err != nil {
				h.t.Fatal(err)
			}
			if d.CCCID != h.cid || d.DATAO != 0 || d.DATAL != uint32(len(w)) || icd != nil {
				h.t.Fatalf("R2T %+v for command %d writing %d bytes", d, h.cid, len(w))
			}
			max := int(h.icr.MAXH2CDATA)
			for off := 0; off < len(w); off += max {
				end := min(off+max, len(w))
				var fl uint8
				if end == len(w) {
					fl = tcppdu.FlagLastPDU
				}
				h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAO: uint32(off)}, fl, w[off:end])
			}
		case tcppdu.TypeC2HData:
			d, err := tcppdu.ParseData(p.hdr, p.f)
			if err != nil {
				h.t.Fatal(err)
			}
			if d.CCCID != h.cid || int(d.DATAO) != len(got) || int(d.DATAO+d.DATAL) > readLen {
				h.t.Fatalf("C2HData %+v for command %d reading %d bytes (have %d)", d, h.cid, readLen, len(got))
			}
			if p.f.Flags&tcppdu.FlagSuccess != 0 {
				h.t.Fatal("C2HData SUCCESS while SQ flow control is on")
			}
			got = append(got, p.data...)
		case tcppdu.TypeCapsuleResp:
			cqe, _ := tcppdu.ParseCapsuleResp(p.hdr)
			if cqe.CID() != h.cid {
				h.t.Fatalf("CQE for CID %d, want %d", cqe.CID(), h.cid)
			}
			return cqe, got
		default:
			h.t.Fatalf("unexpected %s", tcppdu.TypeName(p.f.Type))
		}
	}
}

// must runs a command and fails the test unless it succeeds.
func (h *testHost) must(sqe *nvme.SQE, w []byte, readLen int) []byte {
	h.t.Helper()
	cqe, data := h.do(sqe, w, readLen)
	if st := cqe.Status(); st != nvme.StatusSuccess {
		h.t.Fatalf("opcode %#x: status %v", sqe.Opcode(), st)
	}
	return data
}

// connect sends the Fabrics Connect for queue qid.
func (h *testHost) connect(qid, sqsize, cntlid uint16) { h.connectTo(testSubNQN, qid, sqsize, cntlid) }

// connectTo sends the Fabrics Connect for queue qid of subsystem nqn.
func (h *testHost) connectTo(nqn string, qid, sqsize, cntlid uint16) {
	h.t.Helper()
	var sqe nvme.SQE
	var kato uint32
	if qid == 0 {
		kato = 30000 // ms
	}
	sqe.SetConnect(qid, sqsize, 0, kato)
	d := nvme.ConnectData{CNTLID: cntlid, SubNQN: nqn, HostNQN: testHostNQN}
	d.HostID[0] = 1
	buf := make([]byte, nvme.ConnectDataSize)
	if err := d.Marshal(buf); err != nil {
		h.t.Fatal(err)
	}
	cqe, _ := h.do(&sqe, buf, 0)
	if cqe.Status() != nvme.StatusSuccess {
		h.t.Fatalf("Connect qid %d: %v", qid, cqe.Status())
	}
	h.sqid = qid
	h.cntlid = uint16(cqe.DW0())
}

// enable sets CC.EN and waits for CSTS.RDY.
func (h *testHost) enable() {
	h.t.Helper()
	var sqe nvme.SQE
	sqe.SetPropertySet(nvme.PropCC, false, 0x00460001)
	h.must(&sqe, nil, 0)
	for range 100 {
		sqe = nvme.SQE{}
		sqe.SetPropertyGet(nvme.PropCSTS, false)
		cqe, _ := h.do(&sqe, nil, 0)
		if cqe.DW0()&1 != 0 {
			return
		}
	}
	h.t.Fatal("CSTS.RDY never set")
}

// expectTerm reads until a C2HTermReq and then the end of the connection:
// the target must send exactly that FES (and FEI when given) and close.
func (h *testHost) expectTerm(fes uint16, fei int64) {
	h.t.Helper()
	for {
		p, err := h.readPDU()
		if err != nil {
			h.t.Fatalf("waiting for C2HTermReq (FES %d): %v", fes, err)
		}
		if p.f.Type != tcppdu.TypeC2HTermReq {
			continue
		}
		r, err := tcppdu.ParseTermReq(append(p.hdr, p.data...), p.f)
		if err != nil {
			h.t.Fatal(err)
		}
		if r.FES != fes || (fei >= 0 && int64(r.FEI) != fei) {
			h.t.Fatalf("C2HTermReq FES %d (%s) FEI %d, want FES %d FEI %d", r.FES, tcppdu.FESName(r.FES), r.FEI, fes, fei)
		}
		break
	}
	if _, err := h.br.ReadByte(); !errors.Is(err, io.EOF) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			h.t.Fatal("connection not closed after C2HTermReq")
		}
		if err == nil {
			h.t.Fatal("bytes after C2HTermReq")
		}
	}
}

func bufioReader(nc net.Conn) *bufio.Reader { return bufio.NewReader(nc) }

// isClosed reports the end of a connection closed by either side.
func isClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, io.ErrUnexpectedEOF)
}
