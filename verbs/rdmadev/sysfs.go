package rdmadev

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/Mellanox/rdmamap"
)

// ErrNoDevices: the host has no RDMA device (or no RDMA sysfs class).
var ErrNoDevices = errors.New("rdmadev: no RDMA devices")

// Device is one RDMA device as sysfs shows it.
type Device struct {
	Name        string
	NodeType    string   // "1: CA"
	FWVersion   string   // fw_ver
	Netdevs     []string // netdevs whose RDMA device this is
	CharDevices []string // /dev/infiniband/uverbsN, rdma_cm, …
	Ports       []Port
}

// Port is one port of a device.
type Port struct {
	Num       int
	State     string // "ACTIVE", "DOWN", … (without the numeric prefix)
	PhysState string // "LinkUp", …
	LinkLayer string // "Ethernet" (RoCE) or "InfiniBand"
	GIDs      []GID  // populated entries only
}

// Active reports whether the port is ACTIVE.
func (p Port) Active() bool { return p.State == "ACTIVE" }

// GID is one populated entry of a port's GID table.
type GID struct {
	Index  int
	GID    net.IP // 16 bytes
	Type   string // "RoCE v2", "IB/RoCE v1"
	Netdev string // the netdev the entry belongs to (RoCE)
}

// RoCEv2 reports whether the entry is a RoCE v2 (UDP/IP) GID.
func (g GID) RoCEv2() bool { return strings.EqualFold(g.Type, "RoCE v2") }

// IP is the IP address of a RoCE GID: the IPv4 address of a v4-mapped GID,
// else the GID as an IPv6 address.
func (g GID) IP() net.IP {
	if v4 := g.GID.To4(); v4 != nil {
		return v4
	}
	return g.GID
}

// Sysfs reads RDMA devices under a sysfs root.
type Sysfs struct {
	// Root is the sysfs mount ("" means /sys). With the real /sys,
	// rdmamap lists devices, netdevs and character devices; with another
	// root (tests) everything comes from the tree under Root.
	Root string
}

func (s Sysfs) root() string {
	if s.Root == "" {
		return "/sys"
	}
	return s.Root
}

func (s Sysfs) real() bool { return s.root() == "/sys" }

// List returns every RDMA device, sorted by name, or ErrNoDevices.
func List() ([]Device, error) { return Sysfs{}.List() }

// List returns every RDMA device under the root, sorted by name.
func (s Sysfs) List() ([]Device, error) {
	var names []string
	if s.real() {
		names = rdmamap.GetRdmaDeviceList()
	} else {
		ents, _ := os.ReadDir(filepath.Join(s.root(), "class/infiniband"))
		for _, e := range ents {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, ErrNoDevices
	}
	sort.Strings(names)
	netdevs := s.netdevsByDevice()
	devs := make([]Device, 0, len(names))
	for _, n := range names {
		d, err := s.device(n)
		if err != nil {
			return nil, err
		}
		d.Netdevs = netdevs[n]
		devs = append(devs, d)
	}
	return devs, nil
}

func (s Sysfs) device(name string) (Device, error) {
	dir := filepath.Join(s.root(), "class/infiniband", name)
	d := Device{Name: name, NodeType: readTrim(filepath.Join(dir, "node_type")), FWVersion: readTrim(filepath.Join(dir, "fw_ver"))}
	if s.real() {
		d.CharDevices = rdmamap.GetRdmaCharDevices(name)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "ports"))
	if err != nil {
		return d, fmt.Errorf("rdmadev: %s: %w", name, err)
	}
	for _, e := range ents {
		num, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		d.Ports = append(d.Ports, readPort(filepath.Join(dir, "ports", e.Name()), num))
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	return d, nil
}

func readPort(dir string, num int) Port {
	p := Port{
		Num:       num,
		State:     afterColon(readTrim(filepath.Join(dir, "state"))),
		PhysState: afterColon(readTrim(filepath.Join(dir, "phys_state"))),
		LinkLayer: readTrim(filepath.Join(dir, "link_layer")),
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "gids"))
	for _, e := range ents {
		idx, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ip := parseGID(readTrim(filepath.Join(dir, "gids", e.Name())))
		if ip == nil || ip.IsUnspecified() {
			continue
		}
		// Unused entries fail to read (EINVAL): their type stays empty.
		p.GIDs = append(p.GIDs, GID{
			Index:  idx,
			GID:    ip,
			Type:   readTrim(filepath.Join(dir, "gid_attrs/types", e.Name())),
			Netdev: readTrim(filepath.Join(dir, "gid_attrs/ndevs", e.Name())),
		})
	}
	sort.Slice(p.GIDs, func(i, j int) bool { return p.GIDs[i].Index < p.GIDs[j].Index })
	return p
}

// netdevsByDevice maps RDMA device → netdevs: rdmamap per netdev with the
// real sysfs, the ndevs of the GID tables otherwise.
func (s Sysfs) netdevsByDevice() map[string][]string {
	m := map[string][]string{}
	if s.real() {
		ifs, _ := net.Interfaces()
		for _, i := range ifs {
			if dev, err := rdmamap.GetRdmaDeviceForNetdevice(i.Name); err == nil && dev != "" {
				m[dev] = append(m[dev], i.Name)
			}
		}
		return m
	}
	ents, _ := os.ReadDir(filepath.Join(s.root(), "class/infiniband"))
	for _, e := range ents {
		d, err := s.device(e.Name())
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, p := range d.Ports {
			for _, g := range p.GIDs {
				if g.Netdev != "" && !seen[g.Netdev] {
					seen[g.Netdev] = true
					m[d.Name] = append(m[d.Name], g.Netdev)
				}
			}
		}
	}
	return m
}

// parseGID parses sysfs's "fe80:0000:0000:0000:5054:00ff:fe12:3456".
func parseGID(s string) net.IP {
	if s == "" {
		return nil
	}
	ip := net.ParseIP(s)
	if ip == nil {
		return nil
	}
	return ip.To16()
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// afterColon turns "4: ACTIVE" into "ACTIVE".
func afterColon(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}
