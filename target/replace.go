package target

import (
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// errReplacedDuringFlush fails a broadcast Flush (NSID FFFFFFFFh) that
// met a namespace whose backend was replaced after the Flush loaded the
// namespace table: it did not flush the old backend through that command,
// so it answers a path error (ErrPathUnavailable: Asymmetric Access
// Inaccessible, no DNR) and the host sends the Flush again, to this path
// or another, where it reaches the backends that serve now.
var errReplacedDuringFlush = fmt.Errorf("%w: a namespace's backend was replaced during the flush", blockdev.ErrPathUnavailable)

// ReplaceNamespaceBackend puts backend b under the attached namespace
// nsid in place of its current one, without detaching the namespace: the
// NSID, the identifiers (UUID, NGUID, EUI64), the ANA group and
// ReadOnly stay, no host sees the namespace go, and when the size is
// unchanged no event is raised (Identify reports what it did). It is the
// backend swap of a role change (a replicated volume's copy becoming the
// owner's mirror, or the reverse); ResizeNamespace is the one for a
// resize of the same backend.
//
// b is unwrapped (Unwrapper) as by AddNamespace, and must have the
// namespace's block size and at least its blocks (ErrBadBackend,
// ErrBadConfig); when it has more, every live controller gets the
// Namespace Attribute Changed event as for ResizeNamespace. The namespace
// meters into b when b implements IOMeter, else into the meter it had.
// The caller keeps owning b, and promises that b serves the same data:
// every write completed through the old backend is readable through b,
// and durable once b is flushed.
//
// In-flight commands: commands that took the namespace before the swap
// finish on the old backend, and ReplaceNamespaceBackend blocks until the
// last of them has; afterwards the core never touches the old backend
// again and its owner may close it. A command that read the namespace
// table before the swap but had not started runs on b, with the ANA
// state of its port checked again (so a path the caller turned
// inaccessible before the swap answers Asymmetric Access Inaccessible).
// A broadcast Flush in that position answers a path error the host
// retries (errReplacedDuringFlush). Any goroutine; serialised with the
// other namespace changes of the subsystem.
func (s *Subsystem) ReplaceNamespaceBackend(nsid uint32, b blockdev.Backend) error {
	if b == nil {
		return fmt.Errorf("%w: nil backend for nsid %d", ErrBadBackend, nsid)
	}
	s.nsMu.Lock()
	old := s.ns.Load()
	n := old.get(nsid)
	if n == nil {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d", ErrNoNamespace, nsid)
	}
	c := NamespaceConfig{NSID: nsid, Backend: b, UUID: n.uuid, NGUID: n.nguid, EUI64: n.eui64,
		ReadOnly: n.readOnly, ANAGroup: n.anaGroup}
	if _, ok := b.(IOMeter); !ok {
		c.Meter = n.meter
	}
	nn, err := newNamespace(s.nqn, c)
	if err != nil {
		s.nsMu.Unlock()
		return err
	}
	was, now := n.backend.Blocks(), nn.backend.Blocks()
	switch {
	case nn.shift != n.shift:
		err = fmt.Errorf("%w: nsid %d: backend block size %d, the namespace's is %d", ErrBadBackend, nsid, nn.blockSize(), n.blockSize())
	case now < was:
		err = fmt.Errorf("%w: nsid %d: backend has %d blocks, the namespace %d (shrinking is not supported)", ErrBadConfig, nsid, now, was)
	}
	if err != nil {
		s.nsMu.Unlock()
		return err
	}
	// next before the table and before ref closes: a command that finds
	// ref closed sees where to go (io.go).
	n.next.Store(nn)
	s.ns.Store(old.with(nn))
	s.nsMu.Unlock()
	<-n.ref.close()
	s.t.log.Info("nvmet: namespace backend replaced", "subnqn", s.nqn, "nsid", nsid, "from_blocks", was, "to_blocks", now)
	if now != was {
		s.namespaceChanged(nsid)
	}
	return nil
}

// maxReplaced bounds how often one command goes after the namespace
// serving in place of a replaced one (each time needs another
// ReplaceNamespaceBackend between its table load and its start); past it
// the command gets a path error the host retries.
const maxReplaced = 4

// current follows n's replacements (ReplaceNamespaceBackend) to the
// namespace that serves in its place now and takes a reference on it. It
// reports false when there is none (n was detached, or replaced more
// often than maxReplaced while being followed).
func (n *namespace) current() (*namespace, bool) {
	for range maxReplaced {
		n = n.next.Load()
		if n == nil {
			return nil, false
		}
		if n.ref.enter() {
			return n, true
		}
	}
	return nil, false
}
