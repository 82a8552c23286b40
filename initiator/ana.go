package initiator

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/nvme"
)

// Asymmetric Namespace Access (NVMe base spec 2.0 §8.1): which path to a
// namespace is optimized, non-optimized or inaccessible.

// ANAState is the ANA state of a namespace through one controller
// (nvme.ANAState* values).
type ANAState uint8

func (s ANAState) String() string {
	switch s {
	case nvme.ANAStateOptimized:
		return "optimized"
	case nvme.ANAStateNonOptimized:
		return "non-optimized"
	case nvme.ANAStateInaccessible:
		return "inaccessible"
	case nvme.ANAStatePersistentLoss:
		return "persistent-loss"
	case nvme.ANAStateChange:
		return "change"
	}
	return fmt.Sprintf("ana-state-%d", uint8(s))
}

// usable reports whether I/O may be sent on a path in this state.
func (s ANAState) usable() bool {
	return s == nvme.ANAStateOptimized || s == nvme.ANAStateNonOptimized
}

// anaLogMax bounds the ANA log read (one admin buffer).
const anaLogMax = adminBufSize

// readANA reads the ANA log page (which clears a pending ANA change
// event) and returns its group descriptors.
func (c *Controller) readANA(ctx context.Context) ([]nvme.ANAGroupDescriptor, error) {
	hdr, err := c.admin.getLogPage(ctx, nvme.LogANA, 0, nvme.ANALogHeaderSize, 0, c.maxTransfer)
	if err != nil {
		return nil, err
	}
	h, err := nvme.ParseANALogHeader(hdr)
	if err != nil {
		return nil, fmt.Errorf("%w: ANA log header: %w", ErrProtocol, err)
	}
	// Descriptors plus NSID lists: read as much as one admin buffer holds.
	n := min(anaLogMax, h.DescriptorsSize()+4*1024)
	n &^= 3
	raw, err := c.admin.getLogPage(ctx, nvme.LogANA, 0, n, 0, c.maxTransfer)
	if err != nil {
		return nil, err
	}
	_, groups, err := nvme.ParseANALog(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: ANA log: %w", ErrProtocol, err)
	}
	return groups, nil
}

// ANAState returns the ANA state of namespace nsid through this
// controller: from the ANA log when the controller reports ANA (CMIC bit
// 3), else optimized (a controller without ANA is a symmetric path).
func (c *Controller) ANAState(ctx context.Context, nsid uint32) (ANAState, error) {
	if c.ident.CMIC&nvme.CMICANA == 0 {
		return nvme.ANAStateOptimized, nil
	}
	groups, err := c.readANA(ctx)
	if err != nil {
		return 0, err
	}
	var grp uint32
	if ns := c.nsByID.Load().Get(nsid); ns != nil {
		grp = ns.Identify().ANAGRPID
	}
	for _, g := range groups {
		for _, id := range g.NSIDs {
			if id == nsid {
				return ANAState(g.State), nil
			}
		}
		if grp != 0 && g.GroupID == grp {
			return ANAState(g.State), nil
		}
	}
	return nvme.ANAStateInaccessible, nil
}

// isPathError reports whether an NVMe status says "this path, not the
// data": ANA inaccessible / transition / persistent loss and path-related
// statuses (SCT 3), which a multipath host retries on another path.
func isPathError(err error) bool {
	var se *StatusError
	if !errors.As(err, &se) {
		return false
	}
	return se.Status.SCT() == nvme.SCTPath
}

// isAbortedByTeardown reports whether the command was aborted because its
// queue was being deleted (a target port shutting down): not executed,
// safe to replay.
func isAbortedByTeardown(err error) bool {
	return errors.Is(err, nvme.StatusAbortSQDeleted)
}
