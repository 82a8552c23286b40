package initiator

import (
	"fmt"
	"strings"

	"github.com/rdmablk/rdmablk/nvme"
)

// Transport is an NVMe-oF transport the host speaks (nvme-cli
// -t/--transport).
type Transport string

// Transports.
const (
	// TransportRDMA is NVMe over RDMA (RoCE v2, InfiniBand, the soft
	// provider): the default.
	TransportRDMA Transport = "rdma"
	// TransportTCP is NVMe/TCP (TP 8000) over a plain TCP connection per
	// queue.
	TransportTCP Transport = "tcp"
)

// Well-known ports (IANA): 4420 for I/O controllers over RDMA and TCP,
// 8009 for NVMe/TCP discovery controllers (nvme-cli's default for
// "discover -t tcp"; over RDMA discovery also uses 4420).
const (
	DefaultPort             = "4420"
	DefaultTCPDiscoveryPort = "8009"
)

// ParseTransport parses "rdma" or "tcp" (any case; "" is rdma).
func ParseTransport(s string) (Transport, error) {
	switch strings.ToLower(s) {
	case "", "rdma":
		return TransportRDMA, nil
	case "tcp":
		return TransportTCP, nil
	}
	return "", fmt.Errorf("%w: transport %q: want rdma or tcp", ErrInvalid, s)
}

func (t Transport) String() string {
	if t == "" {
		return string(TransportRDMA)
	}
	return string(t)
}

// TrType is the transport's TRTYPE in discovery log entries (NVMe-oF
// §5.4: 1 RDMA, 3 TCP).
func (t Transport) TrType() uint8 {
	if t == TransportTCP {
		return nvme.TrTypeTCP
	}
	return nvme.TrTypeRDMA
}

// TransportOf maps a discovery log entry's TRTYPE to a Transport; false
// for a transport this host does not speak.
func TransportOf(trtype uint8) (Transport, bool) {
	switch trtype {
	case nvme.TrTypeRDMA:
		return TransportRDMA, true
	case nvme.TrTypeTCP:
		return TransportTCP, true
	}
	return "", false
}

// splitAddr strips an optional "tcp://" or "rdma://" prefix from addr:
// the path's transport, else def.
func splitAddr(addr string, def Transport) (Transport, string, error) {
	if i := strings.Index(addr, "://"); i >= 0 {
		t, err := ParseTransport(addr[:i])
		if err != nil {
			return "", "", fmt.Errorf("%w: address %q: %w", ErrInvalid, addr, err)
		}
		return t, addr[i+3:], nil
	}
	t, err := ParseTransport(string(def))
	return t, addr, err
}
