package target

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// TestFirstCNTLID: a subsystem hands out controller IDs from
// Options.FirstCNTLID on, wrapping within 1..0xFFEF; zero and reserved
// values start at 1 (two cluster nodes serving one subsystem to a Linux
// host need different IDs, see Options.FirstCNTLID).
func TestFirstCNTLID(t *testing.T) {
	for _, c := range []struct {
		first       uint16
		want, next2 uint16
	}{
		{0, 1, 2},
		{0x1234, 0x1234, 0x1235},
		{0xFFEF, 0xFFEF, 1},
		{0xFFF0, 1, 2},
		{0xFFFF, 1, 2},
	} {
		s := newIOSetup(t, Options{FirstCNTLID: c.first})
		if s.cntlid != c.want {
			t.Errorf("FirstCNTLID %#x: first controller %#x, want %#x", c.first, s.cntlid, c.want)
		}
		if got := newHost(t, s.tg, 32).connectAdmin(testSubNQN, testHostNQN, 0); got != c.next2 {
			t.Errorf("FirstCNTLID %#x: second controller %#x, want %#x", c.first, got, c.next2)
		}
	}
}

// TestCNTLIDRange: with Options.LastCNTLID, or after SetCNTLIDRange,
// controller IDs wrap within the range (a cluster node's range from the
// catalogue), new controllers of existing subsystems move into a new
// range, and a full range refuses the connect instead of leaving it.
func TestCNTLIDRange(t *testing.T) {
	s := newIOSetup(t, Options{FirstCNTLID: 10, LastCNTLID: 12})
	if s.cntlid != 10 {
		t.Fatalf("first controller %d, want 10", s.cntlid)
	}
	h := newHost(t, s.tg, 32)
	if got := h.connectAdmin(testSubNQN, testHostNQN, 0); got != 11 {
		t.Fatalf("second controller %d, want 11", got)
	}
	if got := newHost(t, s.tg, 32).connectAdmin(testSubNQN, testHostNQN, 0); got != 12 {
		t.Fatalf("third controller %d, want 12", got)
	}
	// 10, 11 and 12 are in use: a fourth does not get an ID outside the range.
	if r := newHost(t, s.tg, 32).connect(0, 31, 0, testSubNQN, testHostNQN, nvme.DynamicCNTLID); r.Status().OK() {
		t.Fatalf("fourth controller got ID %d outside the full range 10-12", uint16(r.CQE.DW0()))
	}

	if err := s.tg.SetCNTLIDRange(2048, 4094); err != nil {
		t.Fatal(err)
	}
	if f, l := s.tg.CNTLIDRange(); f != 2048 || l != 4094 {
		t.Fatalf("CNTLIDRange = %d-%d, want 2048-4094", f, l)
	}
	if got := newHost(t, s.tg, 32).connectAdmin(testSubNQN, testHostNQN, 0); got != 2048 {
		t.Fatalf("first controller after SetCNTLIDRange: %d, want 2048", got)
	}
	for _, bad := range [][2]uint16{{0, 5}, {5, 4}, {1, 0xFFF0}} {
		if err := s.tg.SetCNTLIDRange(bad[0], bad[1]); err == nil {
			t.Errorf("SetCNTLIDRange(%d, %d) accepted", bad[0], bad[1])
		}
	}
	if f, l := s.tg.CNTLIDRange(); f != 2048 || l != 4094 {
		t.Fatalf("a refused SetCNTLIDRange changed the range to %d-%d", f, l)
	}
}
