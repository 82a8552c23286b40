package catalog

// Controller ID ranges. Every node with a copy of a replicated volume
// serves the volume's export subsystem, so one host may connect to the
// same subsystem through several nodes; the Linux host refuses a second
// path whose controller ID (CNTLID) another path of that subsystem
// already has ("Duplicate cntlid"). Each cluster node therefore hands out
// controller IDs from a range of its own (target.Options.FirstCNTLID),
// picked by Node.CNTLIDIndex, which the catalogue assigns: distinct
// indices give disjoint ranges by construction.
//
// The controller ID space is 1 to MaxCNTLID (the NVMe Base
// specification reserves 0xFFF0 to 0xFFFF; a Fabrics Connect uses 0xFFFF
// and 0xFFFE to ask for any controller, NVMe-oF 1.1 §3.3), cut into
// MaxCNTLIDNodes ranges of CNTLIDStride IDs: index i (1-based) owns
// (i-1)·CNTLIDStride+1 to i·CNTLIDStride, so index 1 starts at 1, where
// a standalone target starts too.
const (
	// MinCNTLID and MaxCNTLID bound the controller IDs a subsystem may
	// hand out in the dynamic controller model (NVMe-oF 1.1 §3.3).
	MinCNTLID = 1
	MaxCNTLID = 0xFFEF
	// MaxCNTLIDNodes is the number of nodes that get a range: a raft
	// group in which every node votes (rdmablk's join adds voters) is
	// impractical well before 32 members. A node registered while all
	// indices are taken gets none (CNTLIDIndex 0) and falls back to a
	// start hashed from its ID (rdmablkd warns).
	MaxCNTLIDNodes = 32
	// CNTLIDStride is the size of one node's range: 2047 IDs. A node
	// stays inside its range as long as no subsystem on it has created
	// more controllers than that since the process started (the target
	// wraps over the whole ID space, not the range).
	CNTLIDStride = MaxCNTLID / MaxCNTLIDNodes
)

// CNTLIDRange returns the node's controller ID range, first to last
// inclusive; ok is false when it has none (CNTLIDIndex 0 or out of
// range).
func (n Node) CNTLIDRange() (first, last uint16, ok bool) {
	return CNTLIDRange(n.CNTLIDIndex)
}

// CNTLIDRange returns the controller ID range of index i (1 to
// MaxCNTLIDNodes).
func CNTLIDRange(i int) (first, last uint16, ok bool) {
	if i < 1 || i > MaxCNTLIDNodes {
		return 0, 0, false
	}
	return uint16((i-1)*CNTLIDStride + 1), uint16(i * CNTLIDStride), true
}

// cntlidIndex returns the index node id gets when it registers: the one
// it has, else the lowest that no other node holds (0 when all are
// taken).
func (s *State) cntlidIndex(id string) int {
	if n, ok := s.Nodes[id]; ok && n.CNTLIDIndex > 0 {
		return n.CNTLIDIndex
	}
	used := make(map[int]bool, len(s.Nodes))
	for _, n := range s.Nodes {
		used[n.CNTLIDIndex] = true
	}
	for i := 1; i <= MaxCNTLIDNodes; i++ {
		if !used[i] {
			return i
		}
	}
	return 0
}
