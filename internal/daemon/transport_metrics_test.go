package daemon

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The transport keys reach the RDMA binding and its counters reach
// /metrics, labelled by listen address: an admin sees the caps on peers
// that never Connect (issue 10 item 2) without reading logs.
func TestTransportKeysAndMetrics(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(f, []byte(`data_dir: `+dir+`
metrics: {listen: "127.0.0.1:0"}
transport: {connect_timeout: 3s, max_unconnected_queues: 7, max_unconnected_per_host: 2, max_data_buffer_memory: 64M, poll_groups: 1}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	v := NewViper()
	v.SetConfigFile(f)
	if err := v.MergeInConfig(); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(v, []string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.Transport
	if tc.ConnectTimeout != 3*time.Second || tc.MaxUnconnectedQueues != 7 || tc.MaxUnconnectedPerHost != 2 || tc.PollGroups != 1 {
		t.Fatalf("transport config %+v", tc)
	}
	if n, err := tc.dataBufferLimit(); err != nil || n != 64<<20 {
		t.Fatalf("max_data_buffer_memory → %d, %v", n, err)
	}
	d, err := Start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	resp, err := http.Get("http://" + d.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	addr := d.Addrs()[0]
	for _, want := range []string{
		`rdmablk_transport_unconnected_queues{addr="` + addr + `"} 0`,
		`rdmablk_transport_connect_timeouts_total{addr="` + addr + `"} 0`,
		`rdmablk_transport_unconnected_rejected_total{addr="` + addr + `"} 0`,
		`rdmablk_transport_queues{addr="` + addr + `"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, bad := range []string{"max_data_buffer_memory: 12", "poll_groups: -1", "max_data_buffer_memory: lots"} {
		v := NewViper()
		g := filepath.Join(dir, "bad.yaml")
		os.WriteFile(g, []byte("transport: {"+bad+"}\n"), 0o600)
		v.SetConfigFile(g)
		if err := v.MergeInConfig(); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(v, nil); err == nil || !strings.Contains(err.Error(), "transport.") {
			t.Errorf("%s: error %v, want one naming the transport key", bad, err)
		}
	}
}
