package rdma

import (
	"math"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// TestSGLValidation sends malformed data descriptors; each must be answered
// with the status shown, without reaching the core and without hurting the
// queue.
func TestSGLValidation(t *testing.T) {
	const mdt = DefaultMaxDataTransfer
	keyed := func(op uint8, addr uint64, n uint32, sub uint8) nvme.SQE {
		var s nvme.SQE
		s.SetRW(op, 1, 0, 1, 0)
		s.SetCID(0x77)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetKeyed(addr, n, 5, sub)
		return s
	}
	inCapsule := func(op uint8, off uint64, n uint32) nvme.SQE {
		var s nvme.SQE
		s.SetRW(op, 1, 0, 1, 0)
		s.SetCID(0x77)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetDataBlock(off, n, nvme.SGLSubtypeOffset)
		return s
	}
	withType := func(s nvme.SQE, b15 byte) nvme.SQE { s[24+15] = b15; return s }
	cases := []struct {
		name string
		sqe  nvme.SQE
		icd  int // in-capsule bytes sent
		qid  uint16
		want nvme.Status
	}{
		{"keyed length above MDTS", keyed(nvme.IORead, 0x1000, mdt+512, 0), 0, 1, nvme.StatusDataSGLLengthInvalid.WithDNR()},
		{"keyed maximum 24-bit length", keyed(nvme.IOWrite, 0x1000, nvme.MaxKeyedSGLLength, 0), 0, 1, nvme.StatusDataSGLLengthInvalid.WithDNR()},
		{"keyed address+length wraps 2^64", keyed(nvme.IORead, math.MaxUint64-100, 4096, 0), 0, 1, nvme.StatusDataSGLLengthInvalid.WithDNR()},
		{"keyed address+length wraps 2^64 by one", keyed(nvme.IOWrite, math.MaxUint64-4094, 4096, 0), 0, 1, nvme.StatusDataSGLLengthInvalid.WithDNR()},
		{"keyed subtype 1", keyed(nvme.IORead, 0x1000, 512, 1), 0, 1, nvme.StatusSGLTypeInvalid.WithDNR()},
		{"segment descriptor", withType(keyed(nvme.IORead, 0x1000, 512, 0), nvme.SGLTypeSegment<<4), 0, 1, nvme.StatusSGLTypeInvalid.WithDNR()},
		{"transport data block", withType(keyed(nvme.IORead, 0x1000, 512, 0), nvme.SGLTypeTransportBlock<<4), 0, 1, nvme.StatusSGLTypeInvalid.WithDNR()},
		{"unkeyed address data block", withType(inCapsule(nvme.IOWrite, 0, 512), nvme.SGLTypeDataBlock<<4), 512, 1, nvme.StatusSGLTypeInvalid.WithDNR()},
		{"keyed data on a no-data command", keyed(nvme.IOFlush, 0x1000, 512, 0), 0, 1, nvme.StatusInvalidField.WithDNR()},
		{"in-capsule on a read", inCapsule(nvme.IORead, 0, 512), 512, 1, nvme.StatusInvalidField.WithDNR()},
		{"in-capsule offset near 2^32", inCapsule(nvme.IOWrite, math.MaxUint32, 2), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule offset near 2^64", inCapsule(nvme.IOWrite, math.MaxUint64, 2), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule offset+length wraps 2^64", inCapsule(nvme.IOWrite, math.MaxUint64-10, 512), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule length near 2^32", inCapsule(nvme.IOWrite, 1000, math.MaxUint32), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule length past received bytes", inCapsule(nvme.IOWrite, 0, 2048), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule span past received bytes", inCapsule(nvme.IOWrite, 600, 512), 1024, 1, nvme.StatusSGLOffsetInvalid.WithDNR()},
		{"in-capsule on the admin queue", inCapsule(nvme.IOWrite, 0, 512), 512, 0, nvme.StatusSGLOffsetInvalid.WithDNR()},
	}
	attr := defaultFakeAttr()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ioParams(t, attr, 8, 4)
			if tc.qid == 0 {
				p.qid, p.icd = 0, 0
			}
			g := newFakeRig(t, attr, Config{}, p)
			g.qp.reset()
			sqe := tc.sqe
			g.deliver(0, capsule(&sqe, make([]byte, tc.icd)))
			g.step()
			c := g.onlyCQE()
			if c.Status() != tc.want || c.CID() != 0x77 || c.SQID() != tc.qid {
				t.Fatalf("CQE status %v cid %#x sqid %d, want %v", c.Status(), c.CID(), c.SQID(), tc.want)
			}
			if g.fq.executed.Load() != 0 || g.q.dying || len(g.sendsOf(verbs.OpRDMARead))+len(g.sendsOf(verbs.OpRDMAWrite)) != 0 {
				t.Fatal("bad command reached the core, moved data or killed the queue")
			}
			// The queue keeps working: a valid command on the next buffer.
			g.complete(g.sendsOf(verbs.OpSend)[0])
			g.step()
			g.qp.reset()
			ok := keyed(nvme.IORead, 0x1000, 512, 0)
			g.deliver(1, capsule(&ok, nil))
			g.step()
			if len(g.sendsOf(verbs.OpSend)) != 1 {
				t.Fatal("queue stopped working after the bad command")
			}
		})
	}
}

func TestSGLEdgeAccepted(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	// The last byte at 2^64-1 is a valid span.
	sqe := rwSQE(nvme.IOWrite, 1, 0, 8, math.MaxUint64-4095, 9, 0)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	if r := g.sendsOf(verbs.OpRDMARead); len(r) != 1 || r[0].RemoteAddr != math.MaxUint64-4095 {
		t.Fatalf("posted %+v, want a READ of the last 4 KiB of the address space", g.qp.sends)
	}
	// Zero length keyed SGL: a command without data goes to the core.
	var fl nvme.SQE
	fl.SetOpcode(nvme.IOFlush)
	fl.SetPSDT(nvme.PSDTSGL)
	fl.SGL1().SetNull()
	g.qp.reset()
	g.deliver(1, capsule(&fl, nil))
	g.step()
	if c := g.onlyCQE(); !c.Status().OK() {
		t.Fatalf("flush status %v", c.Status())
	}
}

func TestPRPRejected(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	sqe := rwSQE(nvme.IORead, 1, 0, 1, 0x1000, 9, 0)
	sqe.SetPSDT(nvme.PSDTPRP)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	if c := g.onlyCQE(); c.Status() != nvme.StatusInvalidField.WithDNR() {
		t.Fatalf("status %v", c.Status())
	}
}
