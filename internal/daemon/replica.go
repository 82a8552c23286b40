package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
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
func replicaLegOpener(p verbs.Provider, transport string, zcMin int, log *slog.Logger) reconcile.LegOpener {
	software := softwareRDMAOnly(p, sysClassInfiniband)
	if software && (transport == "" || strings.EqualFold(transport, "auto")) {
		log.Info("replica legs prefer NVMe/TCP listeners: every RDMA device here is software (rxe, siw), where TCP costs the CPU less (cluster.replication.transport: auto)")
	}
	return func(ctx context.Context, t reconcile.LegTarget) (blockdev.Backend, error) {
		paths, err := legPaths(t, transport, software)
		if err != nil {
			return nil, err
		}
		l, err := replica.Open(ctx, replica.LegConfig{Paths: paths, SubNQN: t.SubNQN, HostNQN: t.HostNQN, NSID: t.NSID,
			Options: initiator.Options{Provider: p, ZeroCopySendMin: legZeroCopySendMin(zcMin), Logger: log.With("replica", t.Volume, "node", t.Node)}})
		if err != nil {
			return nil, err // never a typed nil *Leg
		}
		return l, nil
	}
}

// DefaultLegZeroCopySendMin is cluster.replication.tcp_zero_copy_send_min's
// default: a leg's batch of NVMe/TCP capsules goes out zero-copy once it
// carries one 4 KiB write (docs/tcp-zero-copy.md, "The host side").
const DefaultLegZeroCopySendMin = 4096

// legZeroCopySendMin is the initiator's ZeroCopySendMin for a leg from
// the setting: 0 the default, negative never (the initiator's 0).
func legZeroCopySendMin(v int) int {
	switch {
	case v == 0:
		return DefaultLegZeroCopySendMin
	case v < 0:
		return 0
	}
	return v
}

// sysClassInfiniband is where the kernel lists RDMA devices.
const sysClassInfiniband = "/sys/class/infiniband"

// softwareRDMAOnly reports whether p is the ibverbs provider and every
// RDMA device it sees is a software one (rxe, siw: devices without a
// bus, under /sys/devices/virtual). Each packet through such a device
// costs the CPU a copy, a zeroed buffer and a software ICRC (lab
// replperf: a replicated write cost the owner's guest 1.84× a single
// copy's instructions over rxe, 1.24× over NVMe/TCP). The pure-Go soft
// provider stands in for an HCA in tests and is not counted as one.
func softwareRDMAOnly(p verbs.Provider, sysfs string) bool {
	if p == nil || p.Name() != "ibverbs" {
		return false
	}
	devs, err := p.Devices()
	if err != nil || len(devs) == 0 {
		return false
	}
	for _, d := range devs {
		if !virtualRDMADevice(sysfs, d.Name()) {
			return false
		}
	}
	return true
}

// virtualRDMADevice reports whether sysfs/name resolves under a virtual
// device directory (no PCI or other bus behind it).
func virtualRDMADevice(sysfs, name string) bool {
	dst, err := filepath.EvalSymlinks(filepath.Join(sysfs, name))
	return err == nil && strings.Contains(dst, "/devices/virtual/")
}

// legTransports is the order in which a leg tries a copy node's
// listeners, by cluster.replication.transport; software: every local RDMA
// device is a software one (auto then puts NVMe/TCP first).
func legTransports(setting string, software bool) ([]uint8, error) {
	switch strings.ToLower(setting) {
	case "", "auto":
		if software {
			return []uint8{nvme.TrTypeTCP, nvme.TrTypeRDMA}, nil
		}
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
func legPaths(t reconcile.LegTarget, transport string, software bool) ([]string, error) {
	order, err := legTransports(transport, software)
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
		if len(order) == 1 {
			want = map[uint8]string{nvme.TrTypeRDMA: "RDMA (cluster.replication.transport: rdma)",
				nvme.TrTypeTCP: "NVMe/TCP (cluster.replication.transport: tcp)"}[order[0]]
		}
		return nil, errors.New("replica node " + t.Node + " has no " + want + " listener in the catalogue")
	}
	return paths, nil
}
