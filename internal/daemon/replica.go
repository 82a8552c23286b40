package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/replica"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// replicaLegOpener is the owner's way to its volumes' other copies: our
// initiator (internal/replica) to the copy node's data listeners that
// cluster.replication.transport allows (legPaths), as the host identity
// the copy admits (catalog.OwnerHostNQN of this node and the volume's
// epoch).
func replicaLegOpener(p verbs.Provider, transport string, log *slog.Logger) reconcile.LegOpener {
	return func(ctx context.Context, t reconcile.LegTarget) (blockdev.Backend, error) {
		paths, err := legPaths(t, transport)
		if err != nil {
			return nil, err
		}
		l, err := replica.Open(ctx, replica.LegConfig{Paths: paths, SubNQN: t.SubNQN, HostNQN: t.HostNQN, NSID: t.NSID,
			Options: initiator.Options{Provider: p, Logger: log.With("replica", t.Volume, "node", t.Node)}})
		if err != nil {
			return nil, err // never a typed nil *Leg
		}
		return l, nil
	}
}

// legTransports is the order in which a leg tries a copy node's
// listeners, by cluster.replication.transport.
func legTransports(setting string) ([]uint8, error) {
	switch strings.ToLower(setting) {
	case "", "auto":
		return []uint8{nvme.TrTypeRDMA, nvme.TrTypeTCP}, nil
	case "rdma":
		return []uint8{nvme.TrTypeRDMA}, nil
	case "tcp":
		return []uint8{nvme.TrTypeTCP}, nil
	}
	return nil, fmt.Errorf("%q: want auto, rdma or tcp", setting)
}

// legPaths lists the copy node's listeners the leg may use, in the
// order legTransports gives (the first is the leg's path, the others its
// alternates), NVMe/TCP ones as tcp:// addresses.
func legPaths(t reconcile.LegTarget, transport string) ([]string, error) {
	order, err := legTransports(transport)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, tr := range order {
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
		want := "RDMA or NVMe/TCP"
		switch order[0] {
		case nvme.TrTypeRDMA:
			if len(order) == 1 {
				want = "RDMA (cluster.replication.transport: rdma)"
			}
		case nvme.TrTypeTCP:
			want = "NVMe/TCP (cluster.replication.transport: tcp)"
		}
		return nil, errors.New("replica node " + t.Node + " has no " + want + " listener in the catalogue")
	}
	return paths, nil
}
