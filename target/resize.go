package target

import (
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// NamespaceStats is a snapshot of one namespace (Subsystem.NamespaceStats).
type NamespaceStats struct {
	Blocks    uint64 // current capacity in logical blocks
	BlockSize int    // logical block size in bytes
	// CapacityExceeded counts commands answered Capacity Exceeded because
	// the backing store was full or over quota.
	CapacityExceeded uint64
}

// NamespaceStats returns the counters of namespace nsid. Any goroutine.
func (s *Subsystem) NamespaceStats(nsid uint32) (NamespaceStats, error) {
	n := s.ns.Load().get(nsid)
	if n == nil {
		return NamespaceStats{}, fmt.Errorf("%w: nsid %d", ErrNoNamespace, nsid)
	}
	return NamespaceStats{
		Blocks:           n.backend.Blocks(),
		BlockSize:        n.blockSize(),
		CapacityExceeded: n.noSpace.Load(),
	}, nil
}

// ResizeNamespace grows namespace nsid to blocks logical blocks in place,
// through its backend's blockdev.Resizer (the backend keeps its
// asynchronous and fixed-buffer paths, and the namespace stays attached:
// no command fails during the resize). When the size changed, every live
// controller gets the NSID in its Changed Namespace List and a Namespace
// Attribute Changed event, so hosts re-read Identify Namespace (NSZE).
//
// Shrinking is refused (ErrBadConfig): blocks beyond the new end may be in
// use by commands already accepted. A backend without Resizer is
// ErrBadBackend. Any goroutine; resizes of one subsystem are serialised.
func (s *Subsystem) ResizeNamespace(nsid uint32, blocks uint64) error {
	s.nsMu.Lock()
	n := s.ns.Load().get(nsid)
	if n == nil {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d", ErrNoNamespace, nsid)
	}
	rz, ok := n.backend.(blockdev.Resizer)
	if !ok {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d: backend %T cannot resize in place", ErrBadBackend, nsid, n.backend)
	}
	old := n.backend.Blocks()
	if blocks < old {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d: shrinking from %d to %d blocks is not supported", ErrBadConfig, nsid, old, blocks)
	}
	if blocks == old {
		s.nsMu.Unlock()
		return nil
	}
	err := rz.Resize(blocks)
	s.nsMu.Unlock()
	if err != nil {
		return fmt.Errorf("target: resize nsid %d to %d blocks: %w", nsid, blocks, err)
	}
	s.t.log.Info("nvmet: namespace resized", "subnqn", s.nqn, "nsid", nsid, "from_blocks", old, "to_blocks", blocks)
	s.namespaceChanged(nsid)
	return nil
}
