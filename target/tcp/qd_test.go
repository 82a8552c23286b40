package tcp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
	"github.com/rdmablk/rdmablk/target"
)

// pcmd is one command of a pipelined batch.
type pcmd struct {
	sqe  nvme.SQE
	w    []byte // host-to-controller data
	rlen int    // controller-to-host data expected
	got  []byte
	cqe  nvme.CQE
	done bool
}

// pipeline sends every command before reading any response, answers
// R2Ts as they come and collects C2HData and CQEs by CID: many commands
// in flight on one connection.
func (h *testHost) pipeline(cmds []*pcmd) {
	h.t.Helper()
	byCID := make(map[uint16]*pcmd, len(cmds))
	for _, c := range cmds {
		h.cid++
		c.sqe.SetCID(h.cid)
		c.sqe.SetPSDT(nvme.PSDTSGL)
		var icd []byte
		switch {
		case c.w != nil && len(c.w) <= h.icd:
			c.sqe.SGL1().SetDataBlock(0, uint32(len(c.w)), nvme.SGLSubtypeOffset)
			icd = c.w
		case c.w != nil:
			setTransportSGL(&c.sqe, uint32(len(c.w)))
		default:
			setTransportSGL(&c.sqe, uint32(c.rlen))
		}
		byCID[h.cid] = c
		h.sendCapsule(&c.sqe, icd)
	}
	for left := len(cmds); left > 0; {
		p := h.mustPDU()
		switch p.f.Type {
		case tcppdu.TypeR2T:
			d, _ := tcppdu.ParseData(p.hdr, p.f)
			c := byCID[d.CCCID]
			if c == nil || c.w == nil || d.DATAO != 0 || int(d.DATAL) != len(c.w) {
				h.t.Fatalf("R2T %+v", d)
			}
			max := int(h.icr.MAXH2CDATA)
			for off := 0; off < len(c.w); off += max {
				end := min(off+max, len(c.w))
				var fl uint8
				if end == len(c.w) {
					fl = tcppdu.FlagLastPDU
				}
				h.sendH2C(tcppdu.DataHeader{CCCID: d.CCCID, TTAG: d.TTAG, DATAO: uint32(off)}, fl, c.w[off:end])
			}
		case tcppdu.TypeC2HData:
			d, _ := tcppdu.ParseData(p.hdr, p.f)
			c := byCID[d.CCCID]
			if c == nil || c.done || int(d.DATAO) != len(c.got) || int(d.DATAO+d.DATAL) > c.rlen {
				h.t.Fatalf("C2HData %+v", d)
			}
			c.got = append(c.got, p.data...)
		case tcppdu.TypeCapsuleResp:
			cqe, _ := tcppdu.ParseCapsuleResp(p.hdr)
			c := byCID[cqe.CID()]
			if c == nil || c.done {
				h.t.Fatalf("CQE for CID %d", cqe.CID())
			}
			c.cqe, c.done = cqe, true
			left--
		default:
			h.t.Fatalf("unexpected %s", tcppdu.TypeName(p.f.Type))
		}
	}
}

// TestQueueDepth: 32 commands in flight on one I/O queue (in-capsule and
// R2T writes, then reads), against a mem backend (executed inline), a
// file backend on the worker pool (completions from other goroutines)
// and one on io_uring (submissions batched per read of the socket).
func TestQueueDepth(t *testing.T) {
	for _, backend := range []string{"mem", "file", "file-uring"} {
		t.Run(backend, func(t *testing.T) {
			var be blockdev.Backend
			if backend != "mem" {
				ring := -1 // worker pool
				if backend == "file-uring" {
					ring = 0 // io_uring where the kernel has it: batched submissions
				}
				f, err := file.Open(filepath.Join(t.TempDir(), "vol"), file.Options{Size: testBlocks * testBlock, RingEntries: ring})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				be = f
			}
			r := newRigWith(t, be, nil)
			dg := tcppdu.Digests{Header: true, Data: true}
			admin := r.adminHost(t, dg, 8192)
			h := r.ioHost(t, admin, dg, 8192)
			h.writeReadBack(rand.New(rand.NewPCG(3, 4)), 32, []int{4096, 8192, 16384, 65536}, 0)
		})
	}
}

// TestSplitStream: the reader makes no assumption about where the
// socket's reads end. The host sends every PDU in pieces of 1 to 97
// bytes (loopback delivers each as it is written, so the target's reads
// end inside headers, digests, padding and in-capsule data), 32 commands
// in flight, in-capsule and R2T writes then reads, with and without
// digests, against the io_uring file backend the daemon uses: every
// command completes and reads back what was written.
func TestSplitStream(t *testing.T) {
	for _, dg := range []tcppdu.Digests{{}, {Header: true, Data: true}} {
		t.Run(fmt.Sprintf("hdgst=%v,ddgst=%v", dg.Header, dg.Data), func(t *testing.T) {
			f, err := file.Open(filepath.Join(t.TempDir(), "vol"), file.Options{Size: testBlocks * testBlock, RingEntries: 0})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			r := newRigWith(t, f, nil)
			admin := r.adminHost(t, dg, 8192)
			h := r.ioHost(t, admin, dg, 8192)
			h.split = rand.New(rand.NewPCG(5, 6))
			rng := rand.New(rand.NewPCG(7, 8))
			for round := range 4 {
				h.writeReadBack(rng, 32, []int{4096, 8192, 512, 16384}, round)
			}
		})
	}
}

// writeReadBack pipelines qd writes of random data (command i carries
// sizes[(i+shift)%len(sizes)] bytes; back to back from LBA 0), then qd
// reads of the same blocks, and fails unless every command succeeded and
// every read returned what its write wrote.
func (h *testHost) writeReadBack(rng *rand.Rand, qd int, sizes []int, shift int) {
	h.t.Helper()
	var writes, reads []*pcmd
	lba := uint64(0)
	for i := range qd {
		n := sizes[(i+shift)%len(sizes)]
		w := make([]byte, n)
		for j := range w {
			w[j] = byte(rng.Uint32())
		}
		c := &pcmd{w: w}
		c.sqe.SetRW(nvme.IOWrite, 1, lba, uint32(n/testBlock), 0)
		writes = append(writes, c)
		rd := &pcmd{rlen: n}
		rd.sqe.SetRW(nvme.IORead, 1, lba, uint32(n/testBlock), 0)
		reads = append(reads, rd)
		lba += uint64(n / testBlock)
	}
	h.pipeline(writes)
	h.pipeline(reads)
	for i := range qd {
		if writes[i].cqe.Status() != nvme.StatusSuccess || reads[i].cqe.Status() != nvme.StatusSuccess {
			h.t.Fatalf("command %d (sizes shifted by %d): write %v read %v", i, shift, writes[i].cqe.Status(), reads[i].cqe.Status())
		}
		if !bytes.Equal(reads[i].got, writes[i].w) {
			h.t.Fatalf("command %d (sizes shifted by %d): read back differs", i, shift)
		}
	}
}

// TestConnectTimeout: a connection that never sends its ICReq (or never
// connects) is closed after ConnectTimeout.
func TestConnectTimeout(t *testing.T) {
	r := newRig(t, func(c *Config) { c.ConnectTimeout = 50 * time.Millisecond })
	for _, ic := range []bool{false, true} {
		var h *testHost
		if ic {
			h = dial(t, r.l.Addr(), tcppdu.Digests{})
		} else {
			h = dialRaw(t, r.l.Addr())
		}
		if _, err := h.br.ReadByte(); err == nil {
			t.Fatal("bytes from the target")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("ICReq sent %v: connection not closed", ic)
		}
	}
}

// TestListenerCloseWithConnections: Close ends live connections (one idle
// after Connect, one mid R2T transfer) and returns; hosts see the end.
func TestListenerCloseWithConnections(t *testing.T) {
	r := newRig(t, nil)
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	h := r.ioHost(t, admin, tcppdu.Digests{}, 0)
	var sqe nvme.SQE
	sqe.SetRW(nvme.IOWrite, 1, 0, 16, 0)
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	setTransportSGL(&sqe, 8192)
	h.sendCapsule(&sqe, nil)
	if p := h.mustPDU(); p.f.Type != tcppdu.TypeR2T {
		t.Fatalf("%s", tcppdu.TypeName(p.f.Type))
	}
	if err := r.l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*testHost{admin, h} {
		if _, err := x.readPDU(); err == nil {
			t.Fatal("PDU after Close")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("connection still open after Close")
		}
	}
	// Every connection's queue was destroyed before Close returned.
	if st := r.tg.Stats(); st.Queues != 0 {
		t.Fatalf("%d core queues left after Close", st.Queues)
	}
}

var _ target.QueueConn = (*conn)(nil)

// TestHostOverrunsQueue: a host with more commands outstanding than it
// may have (here: writes holding their slots while they wait for
// H2CData) is disconnected, without a panic or unbounded memory: before
// its Fabrics Connect a connection gets preConnectSlots, after it one slot
// per queue entry.
func TestHostOverrunsQueue(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxQueueDepth = 64 }) // ioHost's SQSIZE 63
	t.Run("before Connect", func(t *testing.T) { overrun(t, dial(t, r.l.Addr(), tcppdu.Digests{}), preConnectSlots) })
	t.Run("I/O queue", func(t *testing.T) {
		admin := r.adminHost(t, tcppdu.Digests{}, 8192)
		overrun(t, r.ioHost(t, admin, tcppdu.Digests{}, 8192), 64)
	})
}

// overrun sends slots+1 writes that wait for H2CData and expects at most
// slots R2Ts, then the end of the connection.
func overrun(t *testing.T, h *testHost, slots int) {
	for range slots + 1 {
		var sqe nvme.SQE
		sqe.SetRW(nvme.IOWrite, 1, 0, 8, 0)
		h.cid++
		sqe.SetCID(h.cid)
		sqe.SetPSDT(nvme.PSDTSGL)
		setTransportSGL(&sqe, 4096)
		h.sendCapsule(&sqe, nil)
	}
	r2ts := 0
	for {
		p, err := h.readPDU()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("connection not closed")
			}
			break
		}
		if p.f.Type == tcppdu.TypeR2T {
			r2ts++
		}
	}
	if r2ts > slots {
		t.Fatalf("%d R2Ts for %d slots", r2ts, slots)
	}
}

// TestDiscoveryOverTCP: a host reaches the discovery controller over
// NVMe/TCP and the log lists this port as transport TCP with its address.
func TestDiscoveryOverTCP(t *testing.T) {
	r := newRig(t, nil)
	h := dial(t, r.l.Addr(), tcppdu.Digests{Header: true, Data: true})
	h.connectTo(nvme.DiscoveryNQN, 0, 31, nvme.DynamicCNTLID)
	h.enable()
	var sqe nvme.SQE
	sqe.SetGetLogPage(nvme.LogDiscovery, 0, 4096, 0)
	hdr, ents, err := nvme.ParseDiscoveryLog(h.must(&sqe, nil, 4096))
	if err != nil {
		t.Fatal(err)
	}
	p := r.l.Port()
	for _, e := range ents {
		if e.SubNQN == testSubNQN && e.TrType == nvme.TrTypeTCP && e.TrAddr == p.TrAddr && e.TrSvcID == p.TrSvcID &&
			e.AdrFam == nvme.AdrFamIPv4 && e.PortID == 1 {
			return
		}
	}
	t.Fatalf("no TCP entry for %s at %s:%s in %+v (%d records)", testSubNQN, p.TrAddr, p.TrSvcID, ents, hdr.NumRec)
}

// TestHostDataAlignment: a host that asks for HPDA 31 (128-byte aligned
// PDU data) gets C2HData whose data starts at PDO 128.
func TestHostDataAlignment(t *testing.T) {
	r := newRig(t, nil)
	h := dialHPDA(t, r.l.Addr(), tcppdu.Digests{Header: true, Data: true}, 31)
	h.connect(0, 31, nvme.DynamicCNTLID)
	h.enable()
	var sqe nvme.SQE
	sqe.SetIdentify(nvme.CNSController, 0)
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	setTransportSGL(&sqe, 4096)
	h.sendCapsule(&sqe, nil)
	p := h.mustPDU()
	if p.f.Type != tcppdu.TypeC2HData || p.f.PDO != 128 || p.f.DataLen != 4096 {
		t.Fatalf("%s PDO %d data %d", tcppdu.TypeName(p.f.Type), p.f.PDO, p.f.DataLen)
	}
	if _, err := nvme.ParseIdentifyController(p.data); err != nil {
		t.Fatal(err)
	}
	if p := h.mustPDU(); p.f.Type != tcppdu.TypeCapsuleResp {
		t.Fatalf("%s", tcppdu.TypeName(p.f.Type))
	}
}

// gatedBackend blocks every WriteAt until release is closed (a blocking
// backend: the core runs it on its worker pool).
type gatedBackend struct {
	*mem.Backend
	entered chan struct{}
	release chan struct{}
}

func (g *gatedBackend) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Backend.WriteAt(bufs, lba, f)
}

// NonBlocking: the wrapper blocks, whatever mem says.
func (g *gatedBackend) NonBlocking() bool { return false }

// TestListenerCloseDrains: Close lets a command the core is executing
// finish and sends its response before closing the connection.
func TestListenerCloseDrains(t *testing.T) {
	g := &gatedBackend{Backend: mem.New(testBlocks, testBlock), entered: make(chan struct{}, 1), release: make(chan struct{})}
	drained := make(chan struct{})
	r := newRigWith(t, g, func(c *Config) { c.drained = func() { close(drained) } })
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	h := r.ioHost(t, admin, tcppdu.Digests{}, 8192)
	var sqe nvme.SQE
	sqe.SetRW(nvme.IOWrite, 1, 0, 8, 0)
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	sqe.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	h.sendCapsule(&sqe, make([]byte, 4096))
	<-g.entered // the write is executing
	closed := make(chan error, 1)
	go func() { closed <- r.l.Close() }()
	<-drained // every connection is draining
	close(g.release)
	p := h.mustPDU()
	cqe, _ := tcppdu.ParseCapsuleResp(p.hdr)
	if p.f.Type != tcppdu.TypeCapsuleResp || cqe.CID() != h.cid || cqe.Status() != nvme.StatusSuccess {
		t.Fatalf("%s CID %d status %v", tcppdu.TypeName(p.f.Type), cqe.CID(), cqe.Status())
	}
	if _, err := h.readPDU(); err == nil {
		t.Fatal("PDU after the drained response")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestUnconnectedCaps: connections without a Fabrics Connect are capped
// per host (here 2): a third is closed at once, and one that connects
// frees its place.
func TestUnconnectedCaps(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxUnconnectedPerHost = 2 })
	a := dial(t, r.l.Addr(), tcppdu.Digests{})
	dial(t, r.l.Addr(), tcppdu.Digests{})
	third := dialRaw(t, r.l.Addr())
	if _, err := third.br.ReadByte(); err == nil {
		t.Fatal("bytes on a refused connection")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("third unconnected connection not refused")
	}
	if st := r.l.Stats(); st.Refused != 1 || st.Unconnected != 2 {
		t.Fatalf("Stats %+v", st)
	}
	// a connects: room for one more (its reader moves it out of the
	// count before it reads the next PDU, so once enable's commands are
	// answered it has).
	a.connect(0, 31, nvme.DynamicCNTLID)
	a.enable()
	dial(t, r.l.Addr(), tcppdu.Digests{})
	if st := r.l.Stats(); st.Refused != 1 || st.Unconnected != 2 {
		t.Fatalf("Stats %+v", st)
	}
}

// TestListenerCloseDoesNotWaitForAER: an Asynchronous Event Request the
// core holds (it completes only when the controller goes away) does not
// hold a drain for DrainTimeout, as in the RDMA binding: Close of a
// listener with a connected host that has an AER outstanding counts no
// drain timeout.
func TestListenerCloseDoesNotWaitForAER(t *testing.T) {
	r := newRig(t, func(c *Config) { c.DrainTimeout = 5 * time.Second })
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	var aer nvme.SQE
	aer.SetAsyncEventRequest()
	admin.cid++
	aer.SetCID(admin.cid)
	aer.SetPSDT(nvme.PSDTSGL)
	setTransportSGL(&aer, 0)
	admin.sendCapsule(&aer, nil)
	// The reader executes capsules in order: once the Keep Alive is
	// answered, the core holds the AER.
	var ka nvme.SQE
	ka.SetKeepAlive()
	admin.must(&ka, nil, 0)
	if err := r.l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := r.l.Stats(); st.DrainTimeouts != 0 {
		t.Fatalf("Close waited DrainTimeout for the held AER: %+v", st)
	}
}
