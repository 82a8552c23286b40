package catalog

import (
	"bytes"
	"fmt"
	"testing"
)

// TestCNTLIDRanges: the ranges tile 1..MaxCNTLID without overlap, index
// 1 starting where a standalone target does.
func TestCNTLIDRanges(t *testing.T) {
	prev := 0
	for i := 1; i <= MaxCNTLIDNodes; i++ {
		first, last, ok := CNTLIDRange(i)
		if !ok || int(first) != prev+1 || last < first || last > MaxCNTLID || int(last-first)+1 != CNTLIDStride {
			t.Fatalf("index %d: %d..%d %v (previous ended at %d)", i, first, last, ok, prev)
		}
		prev = int(last)
	}
	if first, _, _ := CNTLIDRange(1); first != 1 {
		t.Fatalf("index 1 starts at %d", first)
	}
	for _, i := range []int{0, -1, MaxCNTLIDNodes + 1} {
		if _, _, ok := CNTLIDRange(i); ok {
			t.Fatalf("index %d has a range", i)
		}
	}
}

// TestCNTLIDIndexAssigned: nodes get distinct indices when they first
// register (so disjoint ranges), keep theirs when they register again (a
// restart with new addresses, or a command carrying another index), a
// removed node's index is reused, and a node beyond MaxCNTLIDNodes gets
// none.
func TestCNTLIDIndexAssigned(t *testing.T) {
	s := New()
	reg := func(id string, idx int) Node {
		t.Helper()
		res := mustApply(t, s, Command{V: 1, Op: OpRegisterNode, Node: &Node{ID: id, APIAddr: "a-" + id, RaftAddr: "r-" + id, CNTLIDIndex: idx}})
		if res.Node == nil || res.Node.CNTLIDIndex != s.Nodes[id].CNTLIDIndex {
			t.Fatalf("register %s answered %+v, stored %+v", id, res.Node, s.Nodes[id])
		}
		return *res.Node
	}
	ranges := map[string][2]uint16{}
	for _, id := range []string{"n1", "n2", "n3"} {
		n := reg(id, 0)
		f, l, ok := n.CNTLIDRange()
		if !ok {
			t.Fatalf("%s has no range", id)
		}
		for o, r := range ranges {
			if f <= r[1] && r[0] <= l {
				t.Fatalf("%s's range %d..%d overlaps %s's %d..%d", id, f, l, o, r[0], r[1])
			}
		}
		ranges[id] = [2]uint16{f, l}
	}
	if s.Nodes["n1"].CNTLIDIndex != 1 || s.Nodes["n2"].CNTLIDIndex != 2 || s.Nodes["n3"].CNTLIDIndex != 3 {
		t.Fatalf("indices %+v", s.Nodes)
	}
	// n2 restarts (new API address) and asks for n1's index: it keeps its own.
	if n := reg("n2", 1); n.CNTLIDIndex != 2 {
		t.Fatalf("re-registered n2 got index %d", n.CNTLIDIndex)
	}
	// n2 leaves; the next new node takes the freed index; n2 coming back
	// gets the lowest free one.
	mustApply(t, s, Command{V: 1, Op: OpRemoveNode, NodeID: "n2"})
	if n := reg("n4", 0); n.CNTLIDIndex != 2 {
		t.Fatalf("n4 got index %d, want the freed 2", n.CNTLIDIndex)
	}
	if n := reg("n2", 2); n.CNTLIDIndex != 4 {
		t.Fatalf("returning n2 got index %d, want 4", n.CNTLIDIndex)
	}
	// Entries from before indices (a snapshot of an older version) get
	// one when they register again, never a taken one.
	old := s.Nodes["n1"]
	old.CNTLIDIndex = 0
	s.Nodes["n1"] = old
	if n := reg("n1", 0); n.CNTLIDIndex != 1 {
		t.Fatalf("n1 without index got %d, want the free 1", n.CNTLIDIndex)
	}
	// Fill every index: the next node gets none.
	for i := len(s.Nodes); i < MaxCNTLIDNodes; i++ {
		reg(fmt.Sprintf("m%d", i), 0)
	}
	seen := map[int]string{}
	for id, n := range s.Nodes {
		if o, dup := seen[n.CNTLIDIndex]; dup || n.CNTLIDIndex == 0 {
			t.Fatalf("%s and %s share index %d", id, o, n.CNTLIDIndex)
		}
		seen[n.CNTLIDIndex] = id
	}
	if n := reg("extra", 0); n.CNTLIDIndex != 0 {
		t.Fatalf("node %d got index %d", MaxCNTLIDNodes+1, n.CNTLIDIndex)
	}
	// The index survives a snapshot round trip.
	r, err := ReadSnapshot(bytes.NewReader(snap(t, s)))
	if err != nil || r.Nodes["n4"].CNTLIDIndex != 2 {
		t.Fatalf("snapshot round trip: %v %+v", err, r.Nodes["n4"])
	}
}
