package daemon

import "hash/fnv"

// nodeFirstCNTLID is where a cluster node's subsystems start handing out
// controller IDs (target.Options.FirstCNTLID): a point in 1..0xFFEF
// derived from the node ID. Every copy node of a replicated volume serves
// its export subsystem, and a Linux host connected to two of them refuses
// the second path if both gave it the same controller ID ("Duplicate
// cntlid"). Hashing makes that unlikely, not impossible: two nodes
// whose starting points lie within N of each other collide once one has
// handed out N IDs since it started — for a node pair and N = 500 about a
// 1.5 % chance (2·500 of 65,519 points). A collision costs the host that
// path (the kernel refuses it with that message), not data; a start
// assigned by the catalogue would remove it.
func nodeFirstCNTLID(nodeID string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(nodeID))
	return uint16(1 + h.Sum32()%0xFFEF)
}
