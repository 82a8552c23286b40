// Package netns runs code with its OS thread inside a named network
// namespace, and wraps a verbs.Provider so that the RDMA resources an
// initiator creates (CM IDs, PDs, CQs, QPs) are created there.
//
// # Why a thread, and what the namespace decides
//
// Linux network namespaces are per thread. The kernel's RDMA connection
// manager records the calling thread's namespace when an rdma_cm_id is
// created (rdma_create_id) and resolves addresses and routes in it; with
// the RDMA subsystem in exclusive mode (`rdma system set netns exclusive`,
// set before any RDMA device is bound, and a device moved with `rdma dev set
// DEV netns NAME`), only devices assigned to that namespace are usable from
// it. Do locks the goroutine to its thread, switches the thread with
// setns(2), runs the function and switches back. The Go runtime never moves
// a locked goroutine, and a thread whose namespace could not be restored is
// never reused: Do leaves the goroutine locked, so the runtime discards the
// thread when the goroutine exits.
//
// Objects created inside keep their namespace after Do returns: a CM ID
// created in namespace N keeps routing in N; its event channel, PDs, CQs
// and QPs may be used from any thread.
//
// # The /sys caveat
//
// In exclusive mode, what /sys/class/infiniband shows follows the sysfs
// mount's namespace, not the thread's. libibverbs discovers devices through
// /sys, so a process started in the host namespace that later switches a
// thread into N still sees the host's device list. That is why `ip netns
// exec N cmd` remounts /sys inside a private mount namespace. Run the
// initiator as `ip netns exec N rdmablk ... --netns N` (or just under `ip
// netns exec N`) when RDMA is in exclusive mode; in shared mode (the
// default) every namespace sees every device and --netns alone suffices.
//
// # Names
//
// A name without a slash is looked up under /run/netns (where `ip netns
// add` bind-mounts namespaces); a name with a slash is a path to a
// namespace file (/proc/PID/ns/net, /run/netns/N).
package netns
