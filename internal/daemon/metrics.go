package daemon

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/internal/version"
)

// MetricsConfig places the standalone daemon's Prometheus endpoint.
type MetricsConfig struct {
	// Listen is the HTTP address of /metrics ("": off). In cluster mode the
	// control API serves /metrics and this endpoint is not started.
	Listen string `mapstructure:"listen"`
}

// buildInfo is the rdmablk_build_info gauge: always 1, labelled with what
// the binary was built from.
func buildInfo() prometheus.Collector {
	i := version.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "rdmablk", Name: "build_info",
		Help: "1, labelled with the version, VCS commit, Go version and build tags of the running rdmablkd.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion, "tags": i.Tags,
		},
	})
	g.Set(1)
	return g
}

// metricsServer serves /metrics off the data path: its own goroutine
// (http.Server), reading the target's counters only when scraped.
type metricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// startMetrics serves reg on addr. An address that cannot be bound is
// logged as an error and the daemon serves storage without /metrics:
// the endpoint is off the data path, and a second daemon on one host
// (tests, a node next to a standalone target) must not be kept from
// serving volumes by a metrics port.
func startMetrics(addr string, h http.Handler, log *slog.Logger) *metricsServer {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("metrics endpoint not started; serving without /metrics (set metrics.listen to a free address, or \"\" to turn it off)",
			"metrics.listen", addr, "err", err)
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	m := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	log.Info("metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	return m
}

// Addr is the bound address.
func (m *metricsServer) Addr() string { return m.ln.Addr().String() }

func (m *metricsServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	<-m.done
	return err
}

// standaloneMetrics is the registry of a daemon without cluster mode: Go
// and process collectors, the target's counters and build info.
func standaloneMetrics(d *Daemon) http.Handler {
	m := metrics.New()
	m.WatchTarget(d.tgt)
	m.Registry().MustRegister(buildInfo(), d.transportCollector())
	return m.Handler()
}
