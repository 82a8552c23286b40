package daemon

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmablk/rdmablk/target/rdma"
)

// transportCollector exports the RDMA listeners' counters (rdma.Stats),
// one series per listen address: the connection caps and timeouts of
// unauthenticated peers, registered memory, drain drops and data volume.
type transportCollector struct {
	listeners func() []*rdma.Listener
}

type transportMetric struct {
	desc  *prometheus.Desc
	gauge bool
	value func(rdma.Stats) uint64
}

var transportMetrics = func() []transportMetric {
	m := func(name, help string, gauge bool, v func(rdma.Stats) uint64) transportMetric {
		return transportMetric{prometheus.NewDesc("rdmablk_transport_"+name, help, []string{"addr"}, nil), gauge, v}
	}
	return []transportMetric{
		m("accepted_total", "Connections (queues) accepted.", false, func(s rdma.Stats) uint64 { return s.Accepted }),
		m("rejected_total", "Connect requests rejected with a CM reject.", false, func(s rdma.Stats) uint64 { return s.Rejected }),
		m("queues", "Queues connected now.", true, func(s rdma.Stats) uint64 { return s.Queues }),
		m("accept_errors_total", "Accept errors the listener retried (EMFILE, ENFILE, ...).", false, func(s rdma.Stats) uint64 { return s.AcceptErrors }),
		m("unconnected_queues", "Connections waiting for their Fabrics Connect now.", true, func(s rdma.Stats) uint64 { return s.Unconnected }),
		m("unconnected_rejected_total", "Connect requests refused by max_unconnected_queues / max_unconnected_per_host.", false, func(s rdma.Stats) uint64 { return s.UnconnectedRejected }),
		m("connect_timeouts_total", "Connections dropped for no Fabrics Connect within connect_timeout.", false, func(s rdma.Stats) uint64 { return s.ConnectTimeouts }),
		m("registered_bytes", "Memory registered with the RDMA device by the queues.", true, func(s rdma.Stats) uint64 { return s.RegisteredBytes }),
		m("data_buffer_growth_denied_total", "Times max_data_buffer_memory kept a queue from registering more data buffers.", false, func(s rdma.Stats) uint64 { return s.GrowthDenied }),
		m("commands_total", "Command capsules received.", false, func(s rdma.Stats) uint64 { return s.Commands }),
		m("command_errors_total", "Commands the transport answered itself with an error (bad SGL, short capsule).", false, func(s rdma.Stats) uint64 { return s.CommandErrors }),
		m("queue_errors_total", "Queues torn down by an error.", false, func(s rdma.Stats) uint64 { return s.QueueErrors }),
		m("drain_dropped_total", "Capsules left unanswered during a graceful shutdown for the host to retry.", false, func(s rdma.Stats) uint64 { return s.DrainDropped }),
		m("bytes_from_host_total", "Bytes read from hosts by RDMA READ (host writes).", false, func(s rdma.Stats) uint64 { return s.BytesFromHost }),
		m("bytes_to_host_total", "Bytes written to hosts by RDMA WRITE (host reads).", false, func(s rdma.Stats) uint64 { return s.BytesToHost }),
		m("quiet_entries_total", "Times an idle queue went quiet: its poll group stopped polling its CQs until it had work.", false, func(s rdma.Stats) uint64 { return s.QuietEntries }),
		m("poll_spins_total", "Empty passes after which a poll group yielded and passed again instead of sleeping.", false, func(s rdma.Stats) uint64 { return s.Spins }),
		m("clean_skips_total", "Steps that left a busy queue's CQs unpolled because their arms showed nothing had arrived.", false, func(s rdma.Stats) uint64 { return s.CleanSkips }),
		m("quiet_wakes_total", "Times a quiet queue was polled again (a command, a completion from the core, a drain).", false, func(s rdma.Stats) uint64 { return s.QuietWakes }),
	}
}()

func (c transportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range transportMetrics {
		ch <- m.desc
	}
}

func (c transportCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c.listeners() {
		st := l.Stats()
		for _, m := range transportMetrics {
			t := prometheus.CounterValue
			if m.gauge {
				t = prometheus.GaugeValue
			}
			ch <- prometheus.MustNewConstMetric(m.desc, t, float64(m.value(st)), l.Addr())
		}
	}
}

// transportCollector exports the daemon's listeners (fixed once Start
// has returned).
func (d *Daemon) transportCollector() prometheus.Collector {
	return transportCollector{listeners: func() []*rdma.Listener { return d.listeners }}
}
