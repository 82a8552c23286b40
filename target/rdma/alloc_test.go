package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// TestIOPathAllocatesNothing drives full command round trips through the
// transport (receive → parse → READ → execute → WRITE + SEND → completion)
// over fake verbs and a fake core that allocate nothing themselves, and
// asserts the transport allocates nothing per I/O.
func TestIOPathAllocatesNothing(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 32, 4))
	read := rwSQE(nvme.IORead, 1, 0, 8, 0x1000, 7, nvme.SGLSubtypeInvalidate)
	write := rwSQE(nvme.IOWrite, 2, 8, 8, 0x2000, 7, nvme.SGLSubtypeAddress)
	var inc nvme.SQE
	inc.SetRW(nvme.IOWrite, 1, 16, 2, 0)
	inc.SetCID(3)
	inc.SetPSDT(nvme.PSDTSGL)
	inc.SGL1().SetDataBlock(0, 1024, nvme.SGLSubtypeOffset)
	readCap := capsule(&read, nil)
	writeCap := capsule(&write, nil)
	incCap := capsule(&inc, make([]byte, 1024))
	ri := int32(0)
	next := func() int32 { ri = (ri + 1) % 32; return ri }
	roundTrip := func() {
		g.qp.reset()
		g.deliver(next(), readCap)
		g.deliver(next(), writeCap)
		g.deliver(next(), incCap)
		g.step()
		for _, wr := range g.qp.sends {
			if wr.Opcode == verbs.OpRDMARead {
				g.complete(wr)
			}
		}
		g.step()
		for _, wr := range g.qp.sends {
			if wr.Opcode == verbs.OpSend || wr.Opcode == verbs.OpSendWithInv {
				g.complete(wr)
			}
		}
		g.step()
	}
	roundTrip()
	if g.q.active != 0 || g.q.dying {
		t.Fatalf("round trip left %d active slots (dying %v)", g.q.active, g.q.dying)
	}
	if n := testing.AllocsPerRun(200, roundTrip); n != 0 {
		t.Fatalf("%.1f allocations per round trip of 3 commands, want 0", n)
	}
}
