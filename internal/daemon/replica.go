package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/replica"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// replicaLegOpener is the owner's way to its volumes' other copies: our
// initiator (internal/replica) to the copy node's data listeners, RDMA
// ones first, then NVMe/TCP, as the host identity the copy admits
// (catalog.OwnerHostNQN of this node and the volume's epoch).
func replicaLegOpener(p verbs.Provider, log *slog.Logger) reconcile.LegOpener {
	return func(ctx context.Context, t reconcile.LegTarget) (blockdev.Backend, error) {
		var paths []string
		for _, tr := range []uint8{nvme.TrTypeRDMA, nvme.TrTypeTCP} {
			for _, a := range t.Addrs {
				if a.TrType != tr {
					continue
				}
				addr := net.JoinHostPort(a.TrAddr, a.TrSvcID)
				if tr == nvme.TrTypeTCP {
					addr = "tcp://" + addr
				}
				paths = append(paths, addr)
			}
		}
		if len(paths) == 0 {
			return nil, errors.New("replica node " + t.Node + " has no RDMA or NVMe/TCP listener in the catalogue")
		}
		l, err := replica.Open(ctx, replica.LegConfig{Paths: paths, SubNQN: t.SubNQN, HostNQN: t.HostNQN, NSID: t.NSID,
			Options: initiator.Options{Provider: p, Logger: log.With("replica", t.Volume, "node", t.Node)}})
		if err != nil {
			return nil, err // never a typed nil *Leg
		}
		return l, nil
	}
}
