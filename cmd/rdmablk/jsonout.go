package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
)

// The --json output of every command uses snake_case keys (nvme-cli's
// names where it has one: subnqn, traddr, trsvcid, cntlid) and prints
// enumerations as names ("rdma", "ipv4", "nvme subsystem"), never as
// numbers or Go field names. Only --json prints JSON.

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// discoveryRecordJSON is one Discovery Log entry (NVMe over Fabrics 1.1
// §5.4, Figure 40).
type discoveryRecordJSON struct {
	TrType  string `json:"trtype"`
	AdrFam  string `json:"adrfam"`
	SubType string `json:"subtype"`
	TReq    string `json:"treq"`
	PortID  uint16 `json:"portid"`
	TrSvcID string `json:"trsvcid"`
	SubNQN  string `json:"subnqn"`
	TrAddr  string `json:"traddr"`
	CNTLID  uint16 `json:"cntlid"`
	ASQSZ   uint16 `json:"asqsz"`
}

func discoveryJSON(addr string, entries []nvme.DiscoveryLogEntry) any {
	recs := make([]discoveryRecordJSON, 0, len(entries))
	for _, e := range entries {
		recs = append(recs, discoveryRecordJSON{
			TrType: trType(e.TrType), AdrFam: adrFam(e.AdrFam), SubType: subType(e.SubType), TReq: treq(e.TReq),
			PortID: e.PortID, TrSvcID: e.TrSvcID, SubNQN: e.SubNQN, TrAddr: e.TrAddr, CNTLID: e.CNTLID, ASQSZ: e.ASQSZ,
		})
	}
	return struct {
		Discovery string                `json:"discovery_addr"`
		Records   []discoveryRecordJSON `json:"records"`
	}{addr, recs}
}

// treq names the secure channel requirement (TREQ bits 1:0).
func treq(t uint8) string {
	switch t & 3 {
	case 1:
		return "required"
	case 2:
		return "not required"
	}
	return "not specified"
}

type namespaceJSON struct {
	NSID      uint32 `json:"nsid"`
	Bytes     int64  `json:"bytes"`
	BlockSize int    `json:"block_size"`
	Blocks    uint64 `json:"blocks"`
	NGUID     string `json:"nguid"`
}

type identifyJSON struct {
	SubNQN           string          `json:"subnqn"`
	CNTLID           uint16          `json:"cntlid"`
	ControllerType   string          `json:"controller_type"`
	Model            string          `json:"model"`
	Serial           string          `json:"serial"`
	Firmware         string          `json:"firmware"`
	Version          string          `json:"version"`
	MDTS             uint8           `json:"mdts"`
	MaxTransferBytes int64           `json:"max_transfer_bytes"` // 0: unlimited
	IOCCSZ           uint32          `json:"ioccsz"`
	InCapsuleBytes   int             `json:"in_capsule_data_bytes"`
	SGLS             string          `json:"sgls"`
	KeepAliveMS      int             `json:"kas_ms"`
	IOQueues         int             `json:"io_queues"`
	Namespaces       []namespaceJSON `json:"namespaces"`
}

func controllerType(t uint8) string {
	switch t {
	case nvme.CntrlTypeIO:
		return "io"
	case nvme.CntrlTypeDiscovery:
		return "discovery"
	case nvme.CntrlTypeAdmin:
		return "admin"
	}
	return "not reported"
}

func identifyOut(c *initiator.Controller) identifyJSON {
	id := c.Identify()
	out := identifyJSON{
		SubNQN: id.SubNQN, CNTLID: c.CNTLID(), ControllerType: controllerType(id.CNTRLTYPE),
		Model: strings.TrimSpace(id.MN), Serial: strings.TrimSpace(id.SN), Firmware: strings.TrimSpace(id.FR),
		Version: fmt.Sprintf("%d.%d", id.VER>>16, id.VER>>8&0xff), MDTS: id.MDTS,
		IOCCSZ: id.IOCCSZ, InCapsuleBytes: max(int(id.IOCCSZ)*16-64, 0),
		SGLS: fmt.Sprintf("%#x", id.SGLS), KeepAliveMS: int(id.KAS) * 100, IOQueues: c.NumQueues(),
		Namespaces: []namespaceJSON{},
	}
	if id.MDTS != 0 {
		out.MaxTransferBytes = int64(4096) << id.MDTS
	}
	for _, ns := range c.Namespaces() {
		idn := ns.Identify()
		out.Namespaces = append(out.Namespaces, namespaceJSON{ns.NSID(), ns.Size(), ns.BlockSize(), ns.Blocks(), hex.EncodeToString(idn.NGUID[:])})
	}
	return out
}

// devicesJSON is `rdmablk devices --json`.
type devicesJSON struct {
	Devices   []deviceJSON `json:"devices"`
	NetnsMode string       `json:"netns_mode"`
	Providers []string     `json:"providers"`
	Note      string       `json:"note,omitempty"`
}

type deviceJSON struct {
	Name        string     `json:"name"`
	NodeType    string     `json:"node_type"`
	FWVersion   string     `json:"fw_version"`
	Netdevs     []string   `json:"netdevs"`
	CharDevices []string   `json:"char_devices"`
	Ports       []portJSON `json:"ports"`
}

type portJSON struct {
	Num       int       `json:"port"`
	State     string    `json:"state"`
	PhysState string    `json:"phys_state"`
	LinkLayer string    `json:"link_layer"`
	GIDs      []gidJSON `json:"gids"`
}

type gidJSON struct {
	Index  int    `json:"index"`
	GID    string `json:"gid"`
	Type   string `json:"type"`
	Netdev string `json:"netdev"`
}

func devicesOut(r devicesReport) devicesJSON {
	out := devicesJSON{Devices: []deviceJSON{}, NetnsMode: r.NetnsMode, Providers: r.Providers, Note: r.Note}
	for _, d := range r.Devices {
		dj := deviceJSON{Name: d.Name, NodeType: d.NodeType, FWVersion: d.FWVersion, Netdevs: d.Netdevs, CharDevices: d.CharDevices}
		for _, p := range d.Ports {
			pj := portJSON{Num: p.Num, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer}
			for _, g := range p.GIDs {
				pj.GIDs = append(pj.GIDs, gidJSON{g.Index, g.GID.String(), g.Type, g.Netdev})
			}
			dj.Ports = append(dj.Ports, pj)
		}
		out.Devices = append(out.Devices, dj)
	}
	return out
}
