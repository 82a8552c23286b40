package tcp

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
	"github.com/rdmablk/rdmablk/target"
)

var (
	fuzzOnce sync.Once
	fuzzL    *Listener
)

// fuzzListener is one target core with a mem namespace and a Listener
// value (no socket: connections come from net.Pipe) shared by every
// fuzz input.
func fuzzListener(t testing.TB) *Listener {
	fuzzOnce.Do(func() {
		log := slog.New(slog.DiscardHandler)
		tg := target.New(target.Options{Logger: log, Workers: 2})
		sub, err := tg.AddSubsystem(target.SubsystemConfig{NQN: testSubNQN, AllowAnyHost: true})
		if err != nil {
			panic(err)
		}
		if err := sub.AddNamespace(target.NamespaceConfig{NSID: 1, Backend: mem.New(256, testBlock)}); err != nil {
			panic(err)
		}
		cfg := Config{Target: tg, Addr: "127.0.0.1:0", PortID: 1, MaxH2CData: 4096, MaxQueueDepth: 8,
			MaxDataTransfer: 64 << 10, ConnectTimeout: 2 * time.Second, Logger: log}
		if err := cfg.normalize(); err != nil {
			panic(err)
		}
		l := &Listener{cfg: cfg, log: log, conns: map[*conn]struct{}{}, allQuiet: make(chan struct{}),
			unconnectedBy: map[string]int{}}
		if err := tg.AddPort(target.Port{ID: 1, TrType: nvme.TrTypeTCP, AdrFam: nvme.AdrFamIPv4, TrAddr: "127.0.0.1",
			TrSvcID: "4420", Caps: target.TransportCaps{TrType: nvme.TrTypeTCP, InCapsuleDataSize: cfg.InCapsuleDataSize,
				MaxDataTransfer: cfg.MaxDataTransfer, MaxQueueDepth: cfg.MaxQueueDepth, MaxSGLDescriptors: 1}}); err != nil {
			panic(err)
		}
		fuzzL = l
	})
	return fuzzL
}

// FuzzConnection feeds arbitrary bytes to a connection after a valid
// ICReq (digests from the first input byte): whatever they are, the
// connection answers or terminates, and ends when the host stops — no
// panic, no hang, nothing but well-formed PDUs on the wire.
func FuzzConnection(f *testing.F) {
	capsule := func(sqe *nvme.SQE, icd []byte, dg tcppdu.Digests) []byte {
		b := make([]byte, 256)
		n := tcppdu.PutCapsuleCmd(b, sqe, len(icd), dg, 0)
		out := append(b[:n:n], icd...)
		if dg.Data && len(icd) > 0 {
			d := tcppdu.Digest(icd)
			out = append(out, byte(d), byte(d>>8), byte(d>>16), byte(d>>24))
		}
		return out
	}
	var sqe nvme.SQE
	sqe.SetConnect(0, 7, 0, 0)
	sqe.SetPSDT(nvme.PSDTSGL)
	sqe.SGL1().SetDataBlock(0, nvme.ConnectDataSize, nvme.SGLSubtypeOffset)
	cd := make([]byte, nvme.ConnectDataSize)
	(&nvme.ConnectData{CNTLID: nvme.DynamicCNTLID, SubNQN: testSubNQN, HostNQN: testHostNQN}).Marshal(cd)
	for _, dgb := range []byte{0, 3} {
		dg := tcppdu.Digests{Header: dgb&1 != 0, Data: dgb&2 != 0}
		conn := capsule(&sqe, cd, dg)
		var w nvme.SQE
		w.SetRW(nvme.IOWrite, 1, 0, 8, 0)
		w.SetPSDT(nvme.PSDTSGL)
		setTransportSGL(&w, 4096)
		wr := capsule(&w, nil, dg)
		h2c := make([]byte, 256)
		n := tcppdu.PutData(h2c, tcppdu.TypeH2CData, tcppdu.DataHeader{TTAG: 0, DATAL: 4096}, tcppdu.FlagLastPDU, dg, 0)
		f.Add(append([]byte{dgb}, conn...))
		f.Add(append(append(append([]byte{dgb}, conn...), wr...), append(h2c[:n], make([]byte, 4096)...)...))
		f.Add(append([]byte{dgb}, wr...))
	}
	f.Add([]byte{0, 0x04, 0, 72, 72, 0xff, 0xff, 0xff, 0xff})
	term := make([]byte, 152)
	for _, n := range []int{0, 8} {
		k := tcppdu.PutTermReq(term, tcppdu.TypeH2CTermReq, &tcppdu.Error{FES: tcppdu.FESPDUSequenceError}, make([]byte, n))
		f.Add(append([]byte{0}, term[:k]...))
	}
	f.Fuzz(fuzzOne)
}

// fuzzOne runs one FuzzConnection input.
func fuzzOne(t *testing.T, in []byte) {
	if len(in) == 0 {
		return
	}
	l := fuzzListener(t)
	dg := tcppdu.Digests{Header: in[0]&1 != 0, Data: in[0]&2 != 0}
	hostSide, targetSide := net.Pipe()
	defer hostSide.Close()
	c := newConn(l, targetSide)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c.serve()
	}()
	// Read everything the target sends; check its framing.
	readDone := make(chan error, 1)
	go func() {
		h := &testHost{t: t, nc: hostSide, br: bufioReader(hostSide), dg: dg}
		var b [128]byte
		if _, err := io.ReadFull(h.br, b[:]); err != nil {
			readDone <- nil // closed before ICResp: a bad ICReq
			return
		}
		for {
			p, err := h.readPDU()
			if err != nil {
				if err == io.EOF || isClosed(err) {
					err = nil
				}
				readDone <- err
				return
			}
			if p.f.Type == tcppdu.TypeC2HTermReq {
				readDone <- nil
				return
			}
		}
	}()
	var icreq [128]byte
	tcppdu.ICReq{DGST: dg.Bits()}.Marshal(icreq[:])
	_ = hostSide.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := hostSide.Write(icreq[:]); err == nil {
		_, _ = io.Copy(hostSide, bytes.NewReader(in[1:]))
	}
	// The host is done: closing ends the connection whatever state
	// it is in.
	hostSide.Close()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("connection did not end after the host closed")
	}
	if err := <-readDone; err != nil {
		t.Fatalf("target sent: %v", err)
	}
}
