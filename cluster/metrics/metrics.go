package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const ns = "rdmablk"

// Metrics holds a node's registry and the per-volume metric families.
type Metrics struct {
	reg     *prometheus.Registry
	ops     *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	errs    *prometheus.CounterVec
	latency *prometheus.HistogramVec
	nsInfo  *prometheus.GaugeVec
}

// New returns Metrics with the Go and process collectors registered.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "volume_io_total", Help: "Backend I/O operations per volume and op (read, write, flush, write_zeroes, discard).",
		}, []string{"volume", "op"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "volume_io_bytes_total", Help: "Bytes moved by backend reads and writes per volume.",
		}, []string{"volume", "op"}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "volume_io_errors_total", Help: "Backend I/O operations that failed, per volume and op.",
		}, []string{"volume", "op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "volume_io_duration_seconds", Help: "Backend I/O latency per volume and op.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2.5, 14), // 5 µs .. ~0.75 s
		}, []string{"volume", "op"}),
		nsInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "namespace_info", Help: "1 for each namespace this node serves; links nqn/nsid to the volume label of the volume_io_* series.",
		}, []string{"nqn", "nsid", "volume"}),
	}
	m.reg.MustRegister(m.ops, m.bytes, m.errs, m.latency, m.nsInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry (to register more collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Op indexes the operations a VolumeMeter counts.
type Op int

// Operations.
const (
	OpRead Op = iota
	OpWrite
	OpFlush
	OpWriteZeroes
	OpDiscard
	numOps
)

var opNames = [numOps]string{"read", "write", "flush", "write_zeroes", "discard"}

// VolumeMeter records one volume's I/O. Create it with Metrics.Volume.
type VolumeMeter struct {
	ops, bytes, errs [numOps]prometheus.Counter
	lat              [numOps]prometheus.Observer
}

// Volume returns the meter of volume name, resolving its series once.
func (m *Metrics) Volume(name string) *VolumeMeter {
	v := &VolumeMeter{}
	for i, op := range opNames {
		v.ops[i] = m.ops.WithLabelValues(name, op)
		v.bytes[i] = m.bytes.WithLabelValues(name, op)
		v.errs[i] = m.errs.WithLabelValues(name, op)
		v.lat[i] = m.latency.WithLabelValues(name, op)
	}
	return v
}

// ForgetVolume drops every series of volume name (after it was closed).
func (m *Metrics) ForgetVolume(name string) {
	for _, op := range opNames {
		m.ops.DeleteLabelValues(name, op)
		m.bytes.DeleteLabelValues(name, op)
		m.errs.DeleteLabelValues(name, op)
		m.latency.DeleteLabelValues(name, op)
	}
}

// SetNamespace records that nqn/nsid serves volume (on=true) or no
// longer does (on=false).
func (m *Metrics) SetNamespace(nqn string, nsid uint32, volume string, on bool) {
	id := strconv.FormatUint(uint64(nsid), 10)
	if on {
		m.nsInfo.WithLabelValues(nqn, id, volume).Set(1)
	} else {
		m.nsInfo.DeleteLabelValues(nqn, id, volume)
	}
}

// Observe records one operation that started at start, moved n bytes
// and ended with err. It allocates nothing.
func (v *VolumeMeter) Observe(op Op, n int, start time.Time, err error) {
	v.lat[op].Observe(time.Since(start).Seconds())
	v.ops[op].Inc()
	if err != nil {
		v.errs[op].Inc()
		return
	}
	if n > 0 {
		v.bytes[op].Add(float64(n))
	}
}
