package target

import "testing"

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
