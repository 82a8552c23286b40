package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/target"
)

// WatchTarget exports the target's counters and, per subsystem, the
// number of connected controllers.
func (m *Metrics) WatchTarget(t *target.Target) {
	m.reg.MustRegister(&targetCollector{t: t})
}

// RaftSource is what WatchRaft reads (*cluster.Node).
type RaftSource interface {
	Status() cluster.Status
}

// WatchRaft exports the node's raft state.
func (m *Metrics) WatchRaft(src RaftSource) {
	m.reg.MustRegister(&raftCollector{src: src})
}

var (
	ctrlDesc = prometheus.NewDesc(ns+"_subsystem_controllers", "Connected controllers per subsystem.", []string{"nqn"}, nil)
	tgtDescs = map[string]*prometheus.Desc{}
)

func tgtDesc(name, help string) *prometheus.Desc {
	if d, ok := tgtDescs[name]; ok {
		return d
	}
	d := prometheus.NewDesc(ns+"_target_"+name, help, nil, nil)
	tgtDescs[name] = d
	return d
}

var (
	tgtCommands    = tgtDesc("commands_total", "Commands executed by the target core.")
	tgtReads       = tgtDesc("read_commands_total", "Successful NVM Read commands.")
	tgtWrites      = tgtDesc("write_commands_total", "Successful NVM Write commands.")
	tgtBytesRead   = tgtDesc("read_bytes_total", "Bytes returned by successful reads.")
	tgtBytesWrite  = tgtDesc("written_bytes_total", "Bytes accepted by successful writes.")
	tgtErrors      = tgtDesc("command_errors_total", "Commands completed with an error status.")
	tgtNoSpace     = tgtDesc("capacity_exceeded_total", "Commands answered Capacity Exceeded because a backing store was full or over quota (ENOSPC, EDQUOT).")
	tgtControllers = tgtDesc("controllers", "Live controllers, discovery controllers included.")
	tgtNamespaces  = tgtDesc("namespaces", "Namespaces attached over all subsystems.")
	tgtQueues      = tgtDesc("queues", "Transport queues.")
)

type targetCollector struct{ t *target.Target }

func (c *targetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ctrlDesc
	for _, d := range []*prometheus.Desc{tgtCommands, tgtReads, tgtWrites, tgtBytesRead, tgtBytesWrite, tgtErrors, tgtNoSpace, tgtControllers, tgtNamespaces, tgtQueues} {
		ch <- d
	}
}

func (c *targetCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.t.Stats()
	cnt := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gau := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	cnt(tgtCommands, st.Commands)
	cnt(tgtReads, st.ReadCommands)
	cnt(tgtWrites, st.WriteCommands)
	cnt(tgtBytesRead, st.BytesRead)
	cnt(tgtBytesWrite, st.BytesWritten)
	cnt(tgtErrors, st.Errors)
	cnt(tgtNoSpace, st.CapacityExceeded)
	gau(tgtControllers, st.Controllers)
	gau(tgtNamespaces, st.Namespaces)
	gau(tgtQueues, st.Queues)
	for _, s := range c.t.Subsystems() {
		ch <- prometheus.MustNewConstMetric(ctrlDesc, prometheus.GaugeValue, float64(len(s.Controllers())), s.NQN())
	}
}

var (
	raftState   = prometheus.NewDesc(ns+"_raft_state", "1 for the node's current raft state.", []string{"state"}, nil)
	raftLeader  = prometheus.NewDesc(ns+"_raft_is_leader", "1 when this node leads.", nil, nil)
	raftTerm    = prometheus.NewDesc(ns+"_raft_term", "Current raft term.", nil, nil)
	raftCommit  = prometheus.NewDesc(ns+"_raft_commit_index", "Raft commit index.", nil, nil)
	raftApplied = prometheus.NewDesc(ns+"_raft_applied_index", "Raft applied index.", nil, nil)
	raftMembers = prometheus.NewDesc(ns+"_raft_members", "Servers in the raft configuration.", nil, nil)
)

type raftCollector struct{ src RaftSource }

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{raftState, raftLeader, raftTerm, raftCommit, raftApplied, raftMembers} {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Status()
	g := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	for _, st := range []string{"Follower", "Candidate", "Leader", "Shutdown"} {
		v := 0.0
		if s.State == st {
			v = 1
		}
		g(raftState, v, st)
	}
	lead := 0.0
	if s.State == "Leader" {
		lead = 1
	}
	g(raftLeader, lead)
	g(raftTerm, float64(s.Term))
	g(raftCommit, float64(s.CommitIndex))
	g(raftApplied, float64(s.AppliedIndex))
	g(raftMembers, float64(len(s.Members)))
}
