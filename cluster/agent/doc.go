// Package agent runs one cluster member inside rdmablkd: the raft node
// (package cluster), the control API and /metrics (cluster/api/server,
// cluster/metrics), the reconciler and the cluster discovery source
// (cluster/reconcile), the automatic failover watch
// (server.RunFailoverWatch: every member runs it, it acts only while the
// member leads; stopped by Stop), and the join / self-registration loop.
// Config.OpenLeg is how this member, as the owner of a replicated
// volume, reaches the other copies (rdmablkd: internal/replica). The daemon
// and the multi-node tests build members with it.
//
// # Security
//
// Start decides the API's exposure (docs/security.md): roles come from
// client certificates (URI SAN rdmablk://ROLE/NAME) and hashed bearer
// tokens; the node token is accepted as the node role and presented to
// other nodes; without certificates or tokens, reader and admin are open
// to whoever reaches a loopback API. A non-loopback API without TLS, or
// one where anyone would be admin, is refused unless Config.Insecure
// (which warns). With mutual TLS configured, raft runs over it too
// (cluster.TLSLayer). The size of the volume directory's filesystem is
// measured once at start (statfs) and registered with the node, so that
// creates larger than it are refused.
//
// # Lifetimes
//
// The target and its listeners belong to the caller. Create the
// reconcile.Discovery before the target (target.Options.Discovery), start
// the listeners, then Start the agent: it registers the target's ports as
// the node's data listeners. Shut down in this order: Agent.Stop (no more
// passes, API and raft down), then the listeners and the target, then
// Agent.CloseVolumes (the backends the reconciler opened).
//
// # Layout of the data directory
//
//	<DataDir>/raft/raft.db        raft log and stable store (bbolt)
//	<DataDir>/raft/snapshots/     raft snapshots
//	<DataDir>/volumes/<name>.img  backing files of the volumes this node owns
//	<DataDir>/cntlid-range.json   this node's controller-ID range index
//	                              (written by rdmablkd from the catalogue,
//	                              read at its next start)
package agent
