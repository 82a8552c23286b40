package initiator

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// The NVMe/TCP wire's PDU stream reader, without a socket: the reader
// reads a byte stream, writes H2CData / H2CTermReq into a buffer.

const (
	tcpRigReadLen  = 8192  // slot 0: a read (C2HData)
	tcpRigWriteLen = 16384 // slot 1: a write over the in-capsule limit (R2T)
	tcpRigGuard    = 64
)

// tcpRig is a depth-4 tcpWire with three commands outstanding: slot 0 a
// read of 8 KiB, slot 1 a 16 KiB write (R2T), slot 2 a Flush. Data
// buffers sit between guard bytes.
type tcpRig struct {
	q         *qpair
	w         *tcpWire
	out       bytes.Buffer
	mem       []byte
	rd, wrBuf []byte
	cids      [3]uint16
	completed []uint16
	failed    []error
}

func newTCPRig(t testing.TB, dg tcppdu.Digests, stream []byte) *tcpRig {
	r := &tcpRig{}
	r.q = &qpair{qid: 1}
	r.w = newTCPWire(r.q, 4, bytes.NewReader(stream), &r.out, dg, 4, 8192, 8192, 1<<20)
	r.q.onComplete = func(i uint16) { r.completed = append(r.completed, i); r.q.release(i) }
	r.q.onFail = func(err error) { r.failed = append(r.failed, err) }
	r.mem = make([]byte, tcpRigGuard+tcpRigReadLen+tcpRigGuard+tcpRigWriteLen+tcpRigGuard)
	for i := range r.mem {
		r.mem[i] = 0xEE
	}
	r.rd = r.mem[tcpRigGuard : tcpRigGuard+tcpRigReadLen]
	o := 2*tcpRigGuard + tcpRigReadLen
	r.wrBuf = r.mem[o : o+tcpRigWriteLen]
	for i := range r.wrBuf {
		r.wrBuf[i] = byte(i * 7)
	}
	cmds := []struct {
		op     uint8
		buf    []byte
		toCtrl bool
	}{{nvme.IORead, r.rd, false}, {nvme.IOWrite, r.wrBuf, true}, {nvme.IOFlush, nil, false}}
	for k, c := range cmds {
		i, e, ok := r.q.alloc()
		if !ok {
			t.Fatal("no slot")
		}
		var b *Buffer
		if c.buf != nil {
			b = &Buffer{b: c.buf}
			e.SetRW(c.op, 1, 0, uint32(len(c.buf)/512), 0)
		} else {
			e.SetFlush(1)
		}
		r.q.setData(i, e, b, len(c.buf), c.toCtrl, true)
		r.q.queueSend(i)
		r.cids[k] = e.CID()
	}
	if err := r.q.flush(); err != nil {
		t.Fatal(err)
	}
	r.out.Reset()
	return r
}

// run reads PDUs until the stream fails (at the latest with EOF) and
// hands the responses to the qpair; it returns the reader's error.
func (r *tcpRig) run() error {
	for k := 0; k < 1024; k++ {
		if err := r.w.readPDU(); err != nil {
			r.q.poll()
			return err
		}
		r.q.poll()
	}
	return nil
}

// guardsIntact: nothing was written outside the commands' buffers.
func (r *tcpRig) guardsIntact() bool {
	for _, g := range [][]byte{r.mem[:tcpRigGuard], r.mem[tcpRigGuard+tcpRigReadLen : 2*tcpRigGuard+tcpRigReadLen],
		r.mem[len(r.mem)-tcpRigGuard:]} {
		for _, v := range g {
			if v != 0xEE {
				return false
			}
		}
	}
	return true
}

// PDU builders for the controller side of the stream.

func pduResp(cid uint16, dg tcppdu.Digests) []byte {
	var cqe nvme.CQE
	cqe.SetCID(cid)
	b := make([]byte, 64)
	return b[:tcppdu.PutCapsuleResp(b, &cqe, dg)]
}

func pduC2H(cid uint16, off uint32, data []byte, flags uint8, dg tcppdu.Digests) []byte {
	b := make([]byte, 256)
	pdo := tcppdu.PutData(b, tcppdu.TypeC2HData, tcppdu.DataHeader{CCCID: cid, DATAO: off, DATAL: uint32(len(data))}, flags, dg, 0)
	out := append(b[:pdo:pdo], data...)
	if dg.Data {
		out = binary.LittleEndian.AppendUint32(out, tcppdu.Digest(data))
	}
	return out
}

func pduR2T(cid, ttag uint16, off, n uint32, dg tcppdu.Digests) []byte {
	b := make([]byte, 64)
	return b[:tcppdu.PutR2T(b, tcppdu.DataHeader{CCCID: cid, TTAG: ttag, DATAO: off, DATAL: n}, dg)]
}

func pattern8K() []byte {
	d := make([]byte, tcpRigReadLen)
	for i := range d {
		d[i] = byte(i*13 + 1)
	}
	return d
}

// goodStream is what a controller sends for the rig's three commands:
// the read's data in two C2HData PDUs and its response, an R2T for the
// whole write and its response, the Flush's response.
func goodStream(cids [3]uint16, dg tcppdu.Digests) []byte {
	d := pattern8K()
	var s []byte
	s = append(s, pduC2H(cids[0], 0, d[:4096], 0, dg)...)
	s = append(s, pduC2H(cids[0], 4096, d[4096:], tcppdu.FlagLastPDU, dg)...)
	s = append(s, pduResp(cids[0], dg)...)
	s = append(s, pduR2T(cids[1], 7, 0, tcpRigWriteLen, dg)...)
	s = append(s, pduResp(cids[1], dg)...)
	s = append(s, pduResp(cids[2], dg)...)
	return s
}

// TestTCPReaderGolden: the reader puts C2HData into the read's buffer,
// answers the R2T with H2CData PDUs of at most MAXH2CDATA (golden
// headers), and completes the three commands — with and without digests.
func TestTCPReaderGolden(t *testing.T) {
	for _, dg := range []tcppdu.Digests{{}, {Header: true, Data: true}} {
		cids := newTCPRig(t, dg, nil).cids
		r := newTCPRig(t, dg, goodStream(cids, dg))
		if err := r.run(); !errors.Is(err, io.EOF) {
			t.Fatalf("digests %+v: reader ended with %v, want EOF after the stream", dg, err)
		}
		if len(r.failed) != 0 || len(r.completed) != 3 {
			t.Fatalf("digests %+v: completed %v, failed %v", dg, r.completed, r.failed)
		}
		if !bytes.Equal(r.rd, pattern8K()) || !r.guardsIntact() {
			t.Fatalf("digests %+v: read data wrong or written outside the buffer", dg)
		}
		// Two H2CData PDUs of 8 KiB (MAXH2CDATA 8192), TTAG 7, the
		// second with LAST_PDU.
		want := []string{
			"0600181818200000" + "0500" + "0700" + "00000000" + "00200000",
			"0604181818200000" + "0500" + "0700" + "00200000" + "00200000",
		}
		if dg.Header {
			want = []string{
				"0603181c20200000" + "0500" + "0700" + "00000000" + "00200000",
				"0607181c20200000" + "0500" + "0700" + "00200000" + "00200000",
			}
		}
		out := r.out.Bytes()
		for k, w := range want {
			hdr, _ := hex.DecodeString(w)
			if len(out) < len(hdr) || !bytes.Equal(out[:len(hdr)], hdr) {
				t.Fatalf("digests %+v: H2CData %d header\n got %x\nwant %x", dg, k, out[:min(len(out), len(hdr))], hdr)
			}
			pdo := int(out[3])
			data := out[pdo : pdo+8192]
			if !bytes.Equal(data, r.wrBuf[k*8192:(k+1)*8192]) {
				t.Fatalf("digests %+v: H2CData %d carries the wrong bytes", dg, k)
			}
			n := pdo + 8192
			if dg.Data {
				if binary.LittleEndian.Uint32(out[n:]) != tcppdu.Digest(data) {
					t.Fatalf("H2CData %d data digest", k)
				}
				n += 4
			}
			out = out[n:]
		}
		if len(out) != 0 {
			t.Fatalf("digests %+v: %d bytes written after the H2CData", dg, len(out))
		}
	}
}

// TestTCPReaderBadInput: every malformed or unexpected PDU ends the
// queue with an error wrapping ErrProtocol (never a panic, a hang, or a
// byte outside the command's buffer); malformed headers also get an
// H2CTermReq with the FES.
func TestTCPReaderBadInput(t *testing.T) {
	dg := tcppdu.Digests{}
	cids := newTCPRig(t, dg, nil).cids
	d := pattern8K()
	corrupt := func(b []byte, at int) []byte { b[at] ^= 0xFF; return b }
	for _, tc := range []struct {
		name   string
		stream []byte
		dg     tcppdu.Digests
		term   uint16 // FES of the H2CTermReq, 0: none
	}{
		{"unknown CID response", pduResp(0x3F, dg), dg, 0},
		{"stale generation", pduResp(cids[2]+4, dg), dg, 0},
		{"duplicate response", append(pduResp(cids[2], dg), pduResp(cids[2], dg)...), dg, 0},
		{"C2HData for a write", pduC2H(cids[1], 0, d[:512], 0, dg), dg, 0},
		{"C2HData unknown CID", pduC2H(0x33, 0, d[:512], 0, dg), dg, 0},
		{"C2HData past the command", pduC2H(cids[0], 4096, d, 0, dg), dg, tcppdu.FESDataOutOfRange},
		{"C2HData out of order", pduC2H(cids[0], 512, d[:512], 0, dg), dg, tcppdu.FESDataOutOfRange},
		{"C2HData SUCCESS short", pduC2H(cids[0], 0, d[:512], tcppdu.FlagLastPDU|tcppdu.FlagSuccess, dg), dg, 0},
		{"R2T beyond the command", pduR2T(cids[1], 1, 8192, 16384, dg), dg, tcppdu.FESDataOutOfRange},
		{"R2T for a read", pduR2T(cids[0], 1, 0, 512, dg), dg, 0},
		{"R2T unknown CID", pduR2T(0x21, 1, 0, 512, dg), dg, 0},
		{"bad HLEN", corrupt(pduResp(cids[2], dg), 2), dg, tcppdu.FESInvalidHeaderField},
		{"short PLEN", func() []byte { b := pduResp(cids[2], dg); b[4] = 8; return b }(), dg, tcppdu.FESInvalidHeaderField},
		{"huge PLEN", func() []byte {
			b := pduC2H(cids[0], 0, d[:512], 0, dg)
			binary.LittleEndian.PutUint32(b[4:], 1<<31)
			return b
		}(), dg, tcppdu.FESDataLimitExceeded},
		{"host PDU type", func() []byte { b := pduResp(cids[2], dg); b[0] = tcppdu.TypeCapsuleCmd; return b }(), dg, tcppdu.FESInvalidHeaderField},
		{"ICResp again", func() []byte { b := make([]byte, 128); tcppdu.ICResp{MAXH2CDATA: 8192}.Marshal(b); return b }(), dg, tcppdu.FESPDUSequenceError},
		{"header digest error", corrupt(pduResp(cids[2], tcppdu.Digests{Header: true}), 25), tcppdu.Digests{Header: true}, tcppdu.FESHeaderDigestError},
		{"data digest error", corrupt(pduC2H(cids[0], 0, d[:512], 0, tcppdu.Digests{Data: true}), 30), tcppdu.Digests{Data: true}, 0},
		{"missing digest", pduResp(cids[2], dg), tcppdu.Digests{Header: true}, tcppdu.FESInvalidHeaderField},
		{"C2HTermReq", func() []byte {
			b := make([]byte, 64)
			return b[:tcppdu.PutTermReq(b, tcppdu.TypeC2HTermReq, &tcppdu.Error{FES: tcppdu.FESPDUSequenceError}, nil)]
		}(), dg, 0},
		{"truncated", pduC2H(cids[0], 0, d[:512], 0, dg)[:100], dg, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTCPRig(t, tc.dg, tc.stream)
			err := r.run()
			if tc.name == "truncated" {
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("err %v, want unexpected EOF", err)
				}
			} else if err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("reader accepted it: %v (completed %v)", err, r.completed)
			}
			var pe *tcppdu.Error
			if got := errors.As(err, &pe); got != (tc.term != 0) || got && pe.FES != tc.term {
				t.Fatalf("err %v: want FES %#x", err, tc.term)
			}
			if !r.guardsIntact() {
				t.Fatal("bytes written outside the commands' buffers")
			}
			// The wire's own fail wraps it for the controller.
			r.w.fail(err)
			if e := r.w.connErr(); !errors.Is(e, ErrControllerLost) || tc.name != "truncated" && !errors.Is(e, ErrProtocol) {
				t.Fatalf("connErr %v", e)
			}
			if tc.term != 0 {
				b := r.out.Bytes()
				if len(b) < tcppdu.TermReqHLen || b[0] != tcppdu.TypeH2CTermReq || binary.LittleEndian.Uint16(b[8:]) != tc.term {
					t.Fatalf("no H2CTermReq with FES %#x: %x", tc.term, b)
				}
			}
		})
	}
}

// FuzzTCPReader feeds arbitrary controller byte streams to the reader of
// a queue with a read, an R2T write and a Flush outstanding: no panic, no
// hang, no byte outside the commands' buffers, and every stream ends in
// an error (EOF at the latest).
func FuzzTCPReader(f *testing.F) {
	dg := tcppdu.Digests{}
	cids := newTCPRig(f, dg, nil).cids
	f.Add(goodStream(cids, dg), false)
	f.Add(goodStream(cids, tcppdu.Digests{Header: true, Data: true}), true)
	f.Add(pduR2T(cids[1], 1, 8192, 16384, dg), false)
	f.Add(pduC2H(cids[0], 0, pattern8K()[:100], tcppdu.FlagLastPDU|tcppdu.FlagSuccess, dg), false)
	f.Add(append(pduC2H(cids[0], 0, pattern8K(), tcppdu.FlagLastPDU|tcppdu.FlagSuccess, dg), pduResp(cids[2], dg)...), false)
	f.Fuzz(func(t *testing.T, stream []byte, digests bool) {
		dg := tcppdu.Digests{Header: digests, Data: digests}
		r := newTCPRig(t, dg, stream)
		if err := r.run(); err == nil {
			t.Fatal("1024 PDUs from a finite stream")
		}
		if !r.guardsIntact() {
			t.Fatal("bytes written outside the commands' buffers")
		}
		if len(r.completed) > 3 {
			t.Fatalf("%d completions for 3 commands", len(r.completed))
		}
	})
}

// TestTCPConnectionSetupRefusals: a controller that enables other digests
// than asked, answers the ICReq with something else, or closes without an
// ICResp is refused with an error naming it, within the connect timeout.
func TestTCPConnectionSetupRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(c net.Conn)
		want  string
		is    error
	}{
		{"digests not granted", func(c net.Conn) {
			b := make([]byte, 128)
			tcppdu.ICResp{MAXH2CDATA: 8192}.Marshal(b)
			c.Write(b)
		}, "digests asked header+data, controller enabled none", ErrNotSupported},
		{"not an ICResp", func(c net.Conn) {
			c.Write(pduResp(1, tcppdu.Digests{}))
		}, "CapsuleResp of 24 bytes where an ICResp was expected", ErrProtocol},
		{"bad MAXH2CDATA", func(c net.Conn) {
			b := make([]byte, 128)
			tcppdu.ICResp{MAXH2CDATA: 100, DGST: 3}.Marshal(b)
			c.Write(b)
		}, "MAXH2CDATA 100", ErrProtocol},
		{"closed", func(c net.Conn) {}, "instead of answering the ICReq", ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				b := make([]byte, 128)
				if _, err := io.ReadFull(c, b); err != nil {
					return
				}
				tc.reply(c)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = Connect(ctx, "tcp://"+ln.Addr().String(), "nqn.2026-11.io.rdmablk:x",
				Options{HeaderDigest: true, DataDigest: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.is) {
				t.Fatalf("Connect: %v, want %q (%v)", err, tc.want, tc.is)
			}
		})
	}
}

// TestTCPReaderC2HSuccess: C2HData with SUCCESS (and LAST_PDU) after the
// command's whole data completes it without a CapsuleResp (TCP
// §3.6.2.8); a later CapsuleResp for it is then a protocol error.
func TestTCPReaderC2HSuccess(t *testing.T) {
	dg := tcppdu.Digests{}
	cids := newTCPRig(t, dg, nil).cids
	d := pattern8K()
	stream := append(pduC2H(cids[0], 0, d, tcppdu.FlagLastPDU|tcppdu.FlagSuccess, dg), pduResp(cids[0], dg)...)
	r := newTCPRig(t, dg, stream)
	err := r.run()
	if len(r.completed) != 1 || r.completed[0] != 0 || !bytes.Equal(r.rd, d) {
		t.Fatalf("completed %v, data ok %v", r.completed, bytes.Equal(r.rd, d))
	}
	if !errors.Is(err, errTCPProtocol) {
		t.Fatalf("response after SUCCESS: %v, want a protocol error", err)
	}
}

// TestTCPReaderSplitStream: the reader makes no assumption about where
// the socket's reads end. The golden stream (C2HData, R2T, responses;
// with and without digests) is delivered in two reads split at every
// byte, and one byte per read: headers are then taken whole from the
// read buffer or read across the split, and the outcome is the same.
func TestTCPReaderSplitStream(t *testing.T) {
	for _, dg := range []tcppdu.Digests{{}, {Header: true, Data: true}} {
		cids := newTCPRig(t, dg, nil).cids
		stream := goodStream(cids, dg)
		check := func(how string, src io.Reader) {
			t.Helper()
			r := newTCPRig(t, dg, nil)
			r.w.br.Reset(src)
			if err := r.run(); !errors.Is(err, io.EOF) {
				t.Fatalf("digests %+v, %s: reader ended with %v, want EOF after the stream", dg, how, err)
			}
			if len(r.failed) != 0 || len(r.completed) != 3 || !bytes.Equal(r.rd, pattern8K()) || !r.guardsIntact() {
				t.Fatalf("digests %+v, %s: completed %v, failed %v, read data ok %v", dg, how, r.completed, r.failed, bytes.Equal(r.rd, pattern8K()))
			}
		}
		for k := 1; k < len(stream); k++ {
			check(fmt.Sprintf("split at %d", k), io.MultiReader(bytes.NewReader(stream[:k]), bytes.NewReader(stream[k:])))
		}
		check("one byte per read", iotest.OneByteReader(bytes.NewReader(stream)))
	}
}

// batchReader returns the same batch of PDUs on every Read, as a socket
// read that finds a batch of responses.
type batchReader struct{ b []byte }

func (r *batchReader) Read(p []byte) (int, error) { return copy(p, r.b), nil }

// BenchmarkTCPReaderResponses: the reader's cost per CapsuleResp when the
// responses of a batch of 13 commands arrive in one socket read (the
// replicated write path). One op is one response.
func BenchmarkTCPReaderResponses(b *testing.B) {
	const batch = 13
	q := &qpair{qid: 1}
	w := newTCPWire(q, 16, nil, io.Discard, tcppdu.Digests{}, 4, 8192, 8192, 1<<20)
	src := &batchReader{}
	for i := range batch {
		src.b = append(src.b, pduResp(uint16(i), tcppdu.Digests{})...)
	}
	w.br.Reset(src)
	b.ReportAllocs()
	for n := 0; b.Loop(); n++ {
		k := n % batch
		if k == 0 {
			for i := range batch {
				w.slots[i].state.Store(tcpArmed | uint32(i))
			}
		}
		if err := w.readPDU(); err != nil {
			b.Fatal(err)
		}
		if k == batch-1 {
			w.rTail.Store(w.rHead.Load())
			select {
			case <-w.sig:
			default:
			}
		}
	}
}
