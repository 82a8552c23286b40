package daemon

import "testing"

// TestNodeFirstCNTLID: the node IDs of the example cluster (and of the
// lab's) start far apart in the controller ID space, inside 1..0xFFEF,
// and the same ID always gives the same start.
func TestNodeFirstCNTLID(t *testing.T) {
	ids := []string{"n1", "n2", "n3"}
	var starts []int
	for _, id := range ids {
		s := nodeFirstCNTLID(id)
		if s < 1 || s > 0xFFEF || s != nodeFirstCNTLID(id) {
			t.Fatalf("%s: start %#x", id, s)
		}
		starts = append(starts, int(s))
	}
	for i := range starts {
		for j := i + 1; j < len(starts); j++ {
			if d := starts[i] - starts[j]; d > -256 && d < 256 {
				t.Errorf("%s and %s start %d IDs apart (%#x, %#x)", ids[i], ids[j], d, starts[i], starts[j])
			}
		}
	}
}
