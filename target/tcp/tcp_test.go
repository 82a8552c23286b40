package tcp

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
	"github.com/rdmablk/rdmablk/target"
)

const (
	testSubNQN  = "nqn.2026-11.io.rdmablk:tcp-test"
	testHostNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
	testBlock   = 512
	testBlocks  = 8192 // 4 MiB
	testH2C     = 16384
)

// rig is a target core with one mem namespace behind a TCP listener on
// loopback.
type rig struct {
	tg *target.Target
	l  *Listener
	be *mem.Backend
}

func newRig(t testing.TB, mod func(*Config)) *rig { return newRigWith(t, nil, mod) }

// newRigWith serves be (nil: a mem backend) as namespace 1.
func newRigWith(t testing.TB, be blockdev.Backend, mod func(*Config)) *rig {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("TCP_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	tg := target.New(target.Options{Logger: log, Workers: 2})
	sub, err := tg.AddSubsystem(target.SubsystemConfig{NQN: testSubNQN, AllowAnyHost: true})
	if err != nil {
		t.Fatal(err)
	}
	mb := mem.New(testBlocks, testBlock)
	if be == nil {
		be = mb
	}
	if err := sub.AddNamespace(target.NamespaceConfig{NSID: 1, Backend: be}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Target: tg, Addr: "127.0.0.1:0", PortID: 1, MaxH2CData: testH2C, Logger: log}
	if mod != nil {
		mod(&cfg)
	}
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		tg.Close()
	})
	return &rig{tg: tg, l: l, be: mb}
}

// adminHost connects and enables an admin queue.
func (r *rig) adminHost(t testing.TB, dg tcppdu.Digests, icd int) *testHost {
	h := dial(t, r.l.Addr(), dg)
	h.icd = icd
	h.connect(0, 31, nvme.DynamicCNTLID)
	h.enable()
	return h
}

// ioHost connects I/O queue 1 of admin's controller.
func (r *rig) ioHost(t testing.TB, admin *testHost, dg tcppdu.Digests, icd int) *testHost {
	h := dial(t, r.l.Addr(), dg)
	h.icd = icd
	h.connect(1, 63, admin.cntlid)
	return h
}

// TestIO: Fabrics Connect (admin and I/O queue), Identify, then 4 KiB and
// 128 KiB writes read back byte-exact, with each digest combination, with
// in-capsule data and with everything by R2T (Connect data included).
func TestIO(t *testing.T) {
	for _, c := range []struct {
		name string
		dg   tcppdu.Digests
		icd  int
	}{
		{"plain", tcppdu.Digests{}, 8192},
		{"header-digest", tcppdu.Digests{Header: true}, 8192},
		{"data-digest", tcppdu.Digests{Data: true}, 8192},
		{"both-digests", tcppdu.Digests{Header: true, Data: true}, 8192},
		{"r2t-only", tcppdu.Digests{Header: true, Data: true}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil)
			admin := r.adminHost(t, c.dg, c.icd)
			var sqe nvme.SQE
			sqe.SetIdentify(nvme.CNSController, 0)
			id, err := nvme.ParseIdentifyController(admin.must(&sqe, nil, 4096))
			if err != nil {
				t.Fatal(err)
			}
			if id.IOCCSZ != (64+DefaultInCapsuleDataSize)/16 || id.SGLS&nvme.SGLSKeyed != 0 || id.MDTS != 8 {
				t.Fatalf("Identify IOCCSZ %d SGLS %#x MDTS %d", id.IOCCSZ, id.SGLS, id.MDTS)
			}
			io := r.ioHost(t, admin, c.dg, c.icd)
			rng := rand.New(rand.NewPCG(1, 2))
			for _, n := range []int{4096, 128 << 10} {
				w := make([]byte, n)
				for i := range w {
					w[i] = byte(rng.Uint32())
				}
				slba := uint64(rng.IntN(testBlocks - n/testBlock))
				sqe = nvme.SQE{}
				sqe.SetRW(nvme.IOWrite, 1, slba, uint32(n/testBlock), 0)
				io.must(&sqe, w, 0)
				sqe = nvme.SQE{}
				sqe.SetRW(nvme.IORead, 1, slba, uint32(n/testBlock), 0)
				got := io.must(&sqe, nil, n)
				if !bytes.Equal(got, w) {
					t.Fatalf("%d bytes at LBA %d read back differently", n, slba)
				}
				back := make([]byte, n)
				if err := r.be.ReadAt([][]byte{back}, slba); err != nil || !bytes.Equal(back, w) {
					t.Fatalf("backend holds other bytes (%v)", err)
				}
			}
		})
	}
}

// TestDataDigestErrorFailsCommand: a bad data digest fails that command
// with Transient Transport Error (the PDU framing is intact, so the
// connection goes on) and nothing reaches the backend.
func TestDataDigestErrorFailsCommand(t *testing.T) {
	r := newRig(t, nil)
	dg := tcppdu.Digests{Header: true, Data: true}
	admin := r.adminHost(t, dg, 8192)
	io := r.ioHost(t, admin, dg, 8192)
	w := bytes.Repeat([]byte{0xab}, 4096)
	var sqe nvme.SQE
	sqe.SetRW(nvme.IOWrite, 1, 0, 8, 0)
	io.cid++
	sqe.SetCID(io.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	sqe.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	b := make([]byte, 256)
	n := tcppdu.PutCapsuleCmd(b, &sqe, len(w), dg, 0)
	io.write(b[:n], w, binary.LittleEndian.AppendUint32(nil, tcppdu.Digest(w)^1))
	p := io.mustPDU()
	cqe, _ := tcppdu.ParseCapsuleResp(p.hdr)
	if p.f.Type != tcppdu.TypeCapsuleResp || cqe.Status().Code() != nvme.StatusTransientTransportError.Code() {
		t.Fatalf("%s status %v", tcppdu.TypeName(p.f.Type), cqe.Status())
	}
	back := make([]byte, 4096)
	if err := r.be.ReadAt([][]byte{back}, 0); err != nil || bytes.Equal(back, w) {
		t.Fatalf("data with a bad digest reached the backend (%v)", err)
	}
	// The queue still works.
	sqe = nvme.SQE{}
	sqe.SetRW(nvme.IOWrite, 1, 0, 8, 0)
	io.must(&sqe, w, 0)

	// The same for data that came by R2T: a bad digest on one of its
	// H2CData PDUs fails the command once all its data arrived.
	w2 := bytes.Repeat([]byte{0xcd}, 2*testH2C)
	sqe = nvme.SQE{}
	sqe.SetRW(nvme.IOWrite, 1, 0, uint32(len(w2)/testBlock), 0)
	io.cid++
	sqe.SetCID(io.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	setTransportSGL(&sqe, uint32(len(w2)))
	io.sendCapsule(&sqe, nil)
	p = io.mustPDU()
	d, err := tcppdu.ParseData(p.hdr, p.f)
	if p.f.Type != tcppdu.TypeR2T || err != nil {
		t.Fatalf("%s %v", tcppdu.TypeName(p.f.Type), err)
	}
	n = tcppdu.PutData(b, tcppdu.TypeH2CData, tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAL: testH2C}, 0, dg, 0)
	io.write(b[:n], w2[:testH2C], binary.LittleEndian.AppendUint32(nil, ^tcppdu.Digest(w2[:testH2C])))
	io.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAO: testH2C}, tcppdu.FlagLastPDU, w2[testH2C:])
	p = io.mustPDU()
	cqe, _ = tcppdu.ParseCapsuleResp(p.hdr)
	if p.f.Type != tcppdu.TypeCapsuleResp || cqe.Status().Code() != nvme.StatusTransientTransportError.Code() {
		t.Fatalf("%s status %v", tcppdu.TypeName(p.f.Type), cqe.Status())
	}
	back = make([]byte, len(w2))
	if err := r.be.ReadAt([][]byte{back}, 0); err != nil || bytes.Equal(back, w2) {
		t.Fatalf("R2T data with a bad digest reached the backend (%v)", err)
	}
	if st := r.l.Stats(); st.DataDigestErrors != 2 || st.Terminated != 0 || st.Accepted != 2 || st.Connections != 2 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestProtocolErrors: each protocol error gets a C2HTermReq with the FES
// (and FEI) of TCP §3.6.2.5, then the connection is closed — never a
// panic or a hang (every host read has a deadline).
func TestProtocolErrors(t *testing.T) {
	r := newRig(t, nil)
	writeCmd := func(h *testHost, n int) (cid uint16) {
		var sqe nvme.SQE
		sqe.SetRW(nvme.IOWrite, 1, 0, uint32(n/testBlock), 0)
		h.cid++
		sqe.SetCID(h.cid)
		sqe.SetPSDT(nvme.PSDTSGL)
		setTransportSGL(&sqe, uint32(n))
		h.sendCapsule(&sqe, nil)
		return h.cid
	}
	// r2t sends a write of n bytes by R2T on a fresh I/O queue and
	// returns the host and the R2T.
	r2t := func(t *testing.T, n int) (*testHost, tcppdu.DataHeader) {
		admin := r.adminHost(t, tcppdu.Digests{}, 8192)
		h := r.ioHost(t, admin, tcppdu.Digests{}, 0)
		writeCmd(h, n)
		p := h.mustPDU()
		if p.f.Type != tcppdu.TypeR2T {
			t.Fatalf("got %s, want R2T", tcppdu.TypeName(p.f.Type))
		}
		d, err := tcppdu.ParseData(p.hdr, p.f)
		if err != nil {
			t.Fatal(err)
		}
		return h, d
	}
	cases := []struct {
		name string
		run  func(t *testing.T) *testHost
		fes  uint16
		fei  int64 // -1: not checked (reserved)
	}{
		{"capsule before ICReq", func(t *testing.T) *testHost {
			h := dialRaw(t, r.l.Addr())
			var sqe nvme.SQE
			sqe.SetKeepAlive()
			h.sendCapsule(&sqe, nil)
			return h
		}, tcppdu.FESPDUSequenceError, -1},
		{"ICReq PFV 1", func(t *testing.T) *testHost {
			h := dialRaw(t, r.l.Addr())
			var b [128]byte
			tcppdu.ICReq{PFV: 1}.Marshal(b[:])
			h.write(b[:])
			return h
		}, tcppdu.FESUnsupportedParam, 8},
		{"second ICReq", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{})
			var b [128]byte
			tcppdu.ICReq{}.Marshal(b[:])
			h.write(b[:])
			return h
		}, tcppdu.FESPDUSequenceError, -1},
		{"oversize PLEN", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{})
			b := make([]byte, 72)
			tcppdu.CommonHeader{Type: tcppdu.TypeCapsuleCmd, HLen: 72, PDO: 72, PLen: 72 + 1<<20}.Put(b)
			h.write(b)
			return h
		}, tcppdu.FESInvalidHeaderField, 4},
		{"controller PDU type from host", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{})
			b := make([]byte, 24)
			tcppdu.CommonHeader{Type: tcppdu.TypeR2T, HLen: 24, PLen: 24}.Put(b)
			h.write(b)
			return h
		}, tcppdu.FESInvalidHeaderField, 0},
		{"bad header digest", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{Header: true})
			var sqe nvme.SQE
			sqe.SetKeepAlive()
			b := make([]byte, 256)
			n := tcppdu.PutCapsuleCmd(b, &sqe, 0, h.dg, 0)
			b[n-1] ^= 0x80
			h.write(b[:n])
			return h
		}, tcppdu.FESHeaderDigestError, -1},
		{"header digest missing", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{Header: true})
			var sqe nvme.SQE
			b := make([]byte, 256)
			n := tcppdu.PutCapsuleCmd(b, &sqe, 0, tcppdu.Digests{}, 0)
			h.write(b[:n])
			return h
		}, tcppdu.FESInvalidHeaderField, 1},
		{"H2CData out of order", func(t *testing.T) *testHost {
			h, d := r2t(t, 8192)
			h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAO: 8192}, tcppdu.FlagLastPDU, make([]byte, 4096))
			return h
		}, tcppdu.FESDataOutOfRange, -1},
		{"H2CData past the end of the window", func(t *testing.T) *testHost {
			h, d := r2t(t, 8192)
			h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG}, tcppdu.FlagLastPDU, make([]byte, 12288))
			return h
		}, tcppdu.FESDataOutOfRange, -1},
		{"H2CData over MAXH2CDATA", func(t *testing.T) *testHost {
			h, d := r2t(t, 64<<10)
			h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG}, 0, make([]byte, 2*testH2C))
			return h
		}, tcppdu.FESDataLimitExceeded, -1},
		{"H2CData unknown TTAG", func(t *testing.T) *testHost {
			h, d := r2t(t, 8192)
			h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG + 1}, tcppdu.FlagLastPDU, make([]byte, 8192))
			return h
		}, tcppdu.FESInvalidHeaderField, 10},
		{"H2CData wrong CCCID", func(t *testing.T) *testHost {
			h, d := r2t(t, 8192)
			h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID + 1, TTAG: d.TTAG}, tcppdu.FlagLastPDU, make([]byte, 8192))
			return h
		}, tcppdu.FESInvalidHeaderField, 8},
		{"H2CData without R2T", func(t *testing.T) *testHost {
			h := dial(t, r.l.Addr(), tcppdu.Digests{})
			h.sendH2C(tcppdu.DataHeader{}, tcppdu.FlagLastPDU, make([]byte, 512))
			return h
		}, tcppdu.FESInvalidHeaderField, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.run(t)
			h.expectTerm(c.fes, c.fei)
		})
	}
	if st := r.l.Stats(); st.Terminated != uint64(len(cases)) {
		t.Errorf("Stats %+v: want %d terminated", st, len(cases))
	}
}

// TestPreConnectDataLimit: before its Fabrics Connect a connection gets no
// data buffer above 8 KiB — a large transfer is refused with Data SGL
// Length Invalid, the connection stays.
func TestPreConnectDataLimit(t *testing.T) {
	r := newRig(t, nil)
	h := dial(t, r.l.Addr(), tcppdu.Digests{})
	var sqe nvme.SQE
	sqe.SetIdentify(nvme.CNSController, 0)
	cqe, _ := h.do(&sqe, nil, 1<<20)
	if cqe.Status() != nvme.StatusDataSGLLengthInvalid.WithDNR() {
		t.Fatalf("status %v", cqe.Status())
	}
	h.connect(0, 31, nvme.DynamicCNTLID)
}

// TestHostTermReq: an H2CTermReq (with or without the header in error)
// ends the connection quietly.
func TestHostTermReq(t *testing.T) {
	r := newRig(t, nil)
	for i, errData := range []int{8, 0} {
		h := dial(t, r.l.Addr(), tcppdu.Digests{})
		b := make([]byte, 152)
		n := tcppdu.PutTermReq(b, tcppdu.TypeH2CTermReq, &tcppdu.Error{FES: tcppdu.FESHeaderDigestError}, make([]byte, errData))
		h.write(b[:n])
		if _, err := h.br.ReadByte(); err != io.EOF {
			t.Fatalf("after H2CTermReq: %v, want EOF", err)
		}
		if st := r.l.Stats(); st.HostTerminated != uint64(i+1) || st.Terminated != 0 {
			t.Fatalf("Stats %+v", st)
		}
	}
}
