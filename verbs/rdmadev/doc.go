// Package rdmadev discovers RDMA devices from sysfs, without cgo: devices,
// ports, port state, netdevs, GIDs with their RoCE version, character
// devices, and the RDMA subsystem's network-namespace mode. It picks the
// RoCE v2 GID that serves a listen address, which is how rdmablkd decides
// whether the ibverbs provider can serve it.
//
// Sources: github.com/Mellanox/rdmamap (v1.1.0) for the device list,
// netdev → RDMA device and the /dev/infiniband character devices; our own
// reading of /sys/class/infiniband/DEV/ports/N/{state,phys_state,
// link_layer,gids/I,gid_attrs/types/I,gid_attrs/ndevs/I} (rdmamap has no
// GID types and no reverse lookup); github.com/vishvananda/netlink
// (v1.3.1) for `rdma system show netns`.
//
// In RDMA netns exclusive mode, /sys shows the devices of the sysfs
// mount's namespace, not the calling thread's (see package verbs/netns).
//
// All results are values owned by the caller; nothing is cached.
package rdmadev
