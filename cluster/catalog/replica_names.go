package catalog

import "strconv"

// ReplicaNQN is the NVM subsystem through which a volume's owner reaches
// the volume's copy on another node (NVMe Base 2.0 §4.5 NQN format).
// Owner and replica nodes derive it from the volume's name alone, so the
// catalogue need not record it. At most 28+MaxNameLength bytes: always a
// valid NQN for a valid volume name.
func ReplicaNQN(volume string) string { return "nqn.2026-11.io.rdmablk:replica:" + volume }

// OwnerHostNQN is the host NQN a volume's owner presents to its copies
// while it owns the volume at epoch. A replica node admits to ReplicaNQN
// only the host NQN of the owner and epoch its catalogue has now, so that
// the moment it applies a failover it refuses the deposed owner's
// connections (and drops its controllers): a deposed owner's write cannot
// reach the new owner's copy, so it cannot be acknowledged (the write
// needs every in-sync copy, and faulting one needs a commit that its
// stale epoch cannot make).
func OwnerHostNQN(node string, epoch uint64) string {
	return "nqn.2026-11.io.rdmablk:owner:" + node + ":epoch:" + strconv.FormatUint(epoch, 10)
}
