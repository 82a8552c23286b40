package rdmadev

import (
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
)

// Match is the device, port and GID that serve an address.
type Match struct {
	Device string
	Port   int
	GID    GID
}

func (m Match) String() string {
	return fmt.Sprintf("%s port %d GID %d %s (%s, %s)", m.Device, m.Port, m.GID.Index, m.GID.GID, m.GID.Type, m.GID.Netdev)
}

// FindRoCEv2 returns the RoCE v2 GID of an ACTIVE port whose address is ip.
// For an unspecified ip (0.0.0.0, ::) it returns the first RoCE v2 GID of
// any active port; an InfiniBand port serves any address too.
func FindRoCEv2(devs []Device, ip net.IP) (Match, bool) {
	for _, d := range devs {
		for _, p := range d.Ports {
			if !p.Active() {
				continue
			}
			if ip.IsUnspecified() && strings.EqualFold(p.LinkLayer, "InfiniBand") {
				return Match{Device: d.Name, Port: p.Num}, true
			}
			for _, g := range p.GIDs {
				if !g.RoCEv2() {
					continue
				}
				if ip.IsUnspecified() || g.IP().Equal(ip) {
					return Match{Device: d.Name, Port: p.Num, GID: g}, true
				}
			}
		}
	}
	return Match{}, false
}

// Serves checks that an RDMA device serves every listen address
// ("host:port"; an empty host is unspecified) and returns the matches, or
// an error naming the first address no device serves.
func Serves(devs []Device, addrs []string) ([]Match, error) {
	if len(devs) == 0 {
		return nil, ErrNoDevices
	}
	var out []Match
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		ip := net.IPv4zero
		if host != "" {
			ip = net.ParseIP(host)
			if ip == nil {
				ips, err := net.LookupIP(host)
				if err != nil || len(ips) == 0 {
					return nil, fmt.Errorf("rdmadev: listen address %q: cannot resolve", a)
				}
				ip = ips[0]
			}
		}
		m, ok := FindRoCEv2(devs, ip)
		if !ok {
			return nil, fmt.Errorf("rdmadev: no active RDMA port has a RoCE v2 GID for %s", a)
		}
		out = append(out, m)
	}
	return out, nil
}

// NetnsMode returns the RDMA subsystem's network-namespace mode, "shared"
// or "exclusive" (`rdma system show netns`).
func NetnsMode() (string, error) {
	m, err := netlink.RdmaSystemGetNetnsMode()
	if err != nil {
		return "", fmt.Errorf("rdmadev: RDMA netns mode: %w", err)
	}
	return m, nil
}
