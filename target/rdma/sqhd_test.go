package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// Issue 10 item 7: every consumed capsule advances SQHD, also the ones the
// transport answers itself (bad SGL, short capsule, Connect naming another
// queue), so a host doing SQ flow control from SQHD never stalls.
func TestSQHDAdvancesForTransportErrors(t *testing.T) {
	tgt := newRealTarget(t, false)
	g := newRig(t, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1}})
	const depth = 8 // SQ size 8: SQHD wraps after 7
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: depth, dataSize: 1 << 20})
	// The I/O queue's Connect was entry 0: the head is 1 now.
	want := uint16(1)
	var cid uint16 = 100
	bad := []func() []byte{
		func() []byte { // keyed SGL longer than MDTS
			s := io.ioSQE(nvme.IORead, cid, 0, 4096, 0, 0)
			s.SGL1().SetKeyed(io.dataAddr(0), uint32(DefaultMaxDataTransfer+4096), io.rkey(), 0)
			return capsule(&s, nil)
		},
		func() []byte { // unsupported SGL descriptor type
			s := io.ioSQE(nvme.IORead, cid, 0, 4096, 0, 0)
			s[24+15] = 0x50
			return capsule(&s, nil)
		},
		func() []byte { // short capsule with a readable CID
			s := io.ioSQE(nvme.IORead, cid, 0, 4096, 0, 0)
			return s[:16]
		},
		func() []byte { // Connect naming another queue
			d := nvme.ConnectData{CNTLID: 1, SubNQN: testSubNQN, HostNQN: testHostNQN}
			s, icd := io.connectSQE(cid, 3, true, 0, d)
			return capsule(&s, icd)
		},
	}
	for i := range 13 {
		cid++
		if err := io.send(bad[i%len(bad)]()); err != nil {
			t.Fatal(err)
		}
		r, err := io.response(g.ctx)
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		if r.cqe.Status().OK() {
			t.Fatalf("command %d: success for a malformed capsule", i)
		}
		want = (want + 1) % depth
		if got := r.cqe.SQHD(); got != want || r.cqe.CID() != cid || r.cqe.SQID() != 1 {
			t.Fatalf("command %d: CQE cid %d sqid %d SQHD %d, want cid %d sqid 1 SQHD %d",
				i, r.cqe.CID(), r.cqe.SQID(), got, cid, want)
		}
	}
	// A good command after them continues the sequence.
	cid++
	s := io.ioSQE(nvme.IORead, cid, 0, 4096, 0, 0)
	c := io.mustOK(g.ctx, &s, nil)
	if want = (want + 1) % depth; c.SQHD() != want {
		t.Fatalf("good command after the errors: SQHD %d, want %d", c.SQHD(), want)
	}
}
