package target

import "sync/atomic"

// Stats is a snapshot of Target counters (Target.Stats). Counters are
// cumulative since New; the gauges (Ports ... Queues) are current values.
type Stats struct {
	Ports       int // ports added
	Subsystems  int // NVM subsystems (the discovery subsystem excluded)
	Namespaces  int // namespaces attached over all subsystems
	Controllers int // live controllers, discovery controllers included
	Queues      int // queues created by transports and not yet destroyed

	Commands      uint64 // every command passed to Queue.Execute
	AdminCommands uint64 // of which on admin queues (fabrics included)
	ReadCommands  uint64 // successful NVM Reads
	WriteCommands uint64 // successful NVM Writes
	BytesRead     uint64 // data returned by successful Reads
	BytesWritten  uint64 // data accepted by successful Writes
	Errors        uint64 // commands completed with a non-success status

	KeepAliveExpiries uint64 // controllers torn down by KATO expiry
	// AuthFailures counts controllers torn down because a queue failed
	// DH-HMAC-CHAP authentication (or did not authenticate in time).
	AuthFailures uint64
	// CapacityExceeded counts commands completed with Capacity Exceeded
	// because the backing store was full or over quota (ENOSPC, EDQUOT);
	// NamespaceStats has the count per namespace.
	CapacityExceeded uint64
}

// statShards is the number of counter shards. Each queue adds to one shard
// (chosen round robin when it is created) so that queues on different
// goroutines rarely share a cache line.
const statShards = 8

// counterShard is one cache-line sized group of counters. Every field is
// updated with atomics by the queue's goroutine and by workers.
type counterShard struct {
	cmds       atomic.Uint64
	adminCmds  atomic.Uint64
	reads      atomic.Uint64
	writes     atomic.Uint64
	readBytes  atomic.Uint64
	writeBytes atomic.Uint64
	errors     atomic.Uint64
	_          [8]byte // pad to 64 bytes
}

// counters is a sharded set of counterShard.
type counters [statShards]counterShard

// sum adds the shards into s (Commands ... Errors).
func (c *counters) sum(s *Stats) {
	for i := range c {
		sh := &c[i]
		s.Commands += sh.cmds.Load()
		s.AdminCommands += sh.adminCmds.Load()
		s.ReadCommands += sh.reads.Load()
		s.WriteCommands += sh.writes.Load()
		s.BytesRead += sh.readBytes.Load()
		s.BytesWritten += sh.writeBytes.Load()
		s.Errors += sh.errors.Load()
	}
}
