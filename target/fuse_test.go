package target

import (
	"bytes"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestFusedCommandsRejected: a fused Compare+Write pair is not run as two
// plain commands — both halves fail with Invalid Field + DNR and the
// block the Compare protected keeps its data; Identify Controller reports
// FUSES 0.
func TestFusedCommandsRejected(t *testing.T) {
	be := mem.New(64, 512)
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be})
	orig := bytes.Repeat([]byte{0xAA}, 512)
	s.io.expect(rw(nvme.IOWrite, 1, 5, 1, 0), orig, nvme.StatusSuccess)

	cmp := rw(nvme.IOCompare, 1, 5, 1, 0)
	cmp.SetFlags(0x01) // FUSE = 01b, first command
	wr := rw(nvme.IOWrite, 1, 5, 1, 0)
	wr.SetFlags(0x02) // FUSE = 10b, second command
	want := nvme.StatusInvalidField.WithDNR()
	s.io.expect(cmp, bytes.Repeat([]byte{0x55}, 512), want)
	s.io.expect(wr, bytes.Repeat([]byte{0xBB}, 512), want)

	got := make([]byte, 512)
	s.io.expect(rw(nvme.IORead, 1, 5, 1, 0), got, nvme.StatusSuccess)
	if !bytes.Equal(got, orig) {
		t.Fatalf("block overwritten by the second half of a fused pair: % x", got[:8])
	}

	id := s.admin.identify(nvme.CNSController, 0, nvme.StatusSuccess)
	ic, err := nvme.ParseIdentifyController(id)
	if err != nil {
		t.Fatal(err)
	}
	if ic.FUSES != 0 {
		t.Fatalf("FUSES %#x, want 0", ic.FUSES)
	}
}

// TestFuseAndReservedBitsOnEveryQueue: FUSE or reserved CDW0 bits fail any
// command — admin, I/O and fabrics — with Invalid Field + DNR.
func TestFuseAndReservedBitsOnEveryQueue(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	want := nvme.StatusInvalidField.WithDNR()

	var idf nvme.SQE
	idf.SetIdentify(nvme.CNSController, 0)
	idf.SetFlags(0x03) // FUSE = 11b (reserved value)
	s.admin.expect(idf, make([]byte, nvme.IdentifySize), want)

	for _, flags := range []uint8{0x01, 0x02, 0x04, 0x08, 0x10, 0x20} {
		r := rw(nvme.IORead, 1, 0, 1, 0)
		r.SetFlags(flags)
		s.io.expect(r, make([]byte, 512), want)
	}
	// PSDT bits are the transport's business, not rejected here.
	r := rw(nvme.IORead, 1, 0, 1, 0)
	r.SetPSDT(nvme.PSDTSGL)
	s.io.expect(r, make([]byte, 512), nvme.StatusSuccess)

	// A fused Connect creates nothing.
	h := newHost(t, s.tg, 32)
	var c nvme.SQE
	c.SetConnect(0, 31, 0, 0)
	c.SetFlags(c.Flags() | 0x01)
	h.expect(c, connectData(testSubNQN, testHostNQN, nvme.DynamicCNTLID, testHostID), want)
	if h.q.Controller() != nil {
		t.Fatal("fused Connect bound the queue")
	}
}
