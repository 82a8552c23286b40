package daemon

import "hash/fnv"

// nodeFirstCNTLID is where a cluster node's subsystems start handing out
// controller IDs (target.Options.FirstCNTLID): a point in 1..0xFFEF
// derived from the node ID. Every copy node of a replicated volume serves
// its export subsystem, and a Linux host connected to two of them refuses
// the second path if both gave it the same controller ID ("Duplicate
// cntlid"); nodes counting from different points a hash apart do not
// meet until one of them has handed out thousands of IDs.
func nodeFirstCNTLID(nodeID string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(nodeID))
	return uint16(1 + h.Sum32()%0xFFEF)
}
