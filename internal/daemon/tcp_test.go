package daemon

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// TestTCPListener: a listener with transport tcp serves NVMe/TCP (ICReq
// answered by an ICResp) next to an RDMA one, registered as its own
// target port of transport type TCP.
func TestTCPListener(t *testing.T) {
	cfg, err := Load(NewViper(), []string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.Metrics.Listen = ""
	cfg.Listeners = append(cfg.Listeners, ListenerConfig{Addr: "127.0.0.1:0", Transport: "tcp"})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := Start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	addrs := d.Addrs()
	if len(addrs) != 2 {
		t.Fatalf("addrs %v", addrs)
	}
	nc, err := net.DialTimeout("tcp", addrs[1], 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	var b [128]byte
	tcppdu.ICReq{}.Marshal(b[:])
	if _, err := nc.Write(b[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(nc, b[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := tcppdu.ParseICResp(b[:]); err != nil {
		t.Fatal(err)
	}
	var tcpPorts int
	for _, p := range d.Target().Ports() {
		if p.TrType == nvme.TrTypeTCP {
			tcpPorts++
		}
	}
	if tcpPorts != 1 {
		t.Fatalf("%d TCP ports registered", tcpPorts)
	}
}

func TestListenerTransportValidated(t *testing.T) {
	cfg, err := Load(NewViper(), []string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners[0].Transport = "fc"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `listeners[0].transport "fc": want rdma or tcp`) {
		t.Fatalf("Validate: %v", err)
	}
}
