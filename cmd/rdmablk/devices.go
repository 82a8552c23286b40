package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/verbs/providers"
	"github.com/rdmablk/rdmablk/verbs/rdmadev"
)

// devicesReport is what `rdmablk devices` prints (as JSON: devicesOut).
type devicesReport struct {
	Devices   []rdmadev.Device
	NetnsMode string
	Providers []string
	Note      string
}

func newDevices(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List RDMA devices, ports, state, netdevs, GIDs (with RoCE version) and the RDMA netns mode",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := devicesReport{Providers: providers.Names()}
			devs, err := rdmadev.List()
			switch {
			case errors.Is(err, rdmadev.ErrNoDevices):
				r.Note = "no RDMA devices on this host (for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)"
			case err != nil:
				return err
			}
			r.Devices = devs
			if m, err := rdmadev.NetnsMode(); err == nil {
				r.NetnsMode = m
			} else {
				r.NetnsMode = "unknown (" + err.Error() + ")"
			}
			if g.json {
				return writeJSON(cmd.OutOrStdout(), devicesOut(r))
			}
			printDevices(cmd.OutOrStdout(), r)
			return nil
		},
	}
}

func printDevices(w io.Writer, r devicesReport) {
	if r.Note != "" {
		fmt.Fprintln(w, r.Note)
	}
	for _, d := range r.Devices {
		fmt.Fprintf(w, "%s  node %q  fw %s  netdevs [%s]\n", d.Name, d.NodeType, d.FWVersion, strings.Join(d.Netdevs, " "))
		if len(d.CharDevices) > 0 {
			fmt.Fprintf(w, "  char devices: %s\n", strings.Join(d.CharDevices, " "))
		}
		for _, p := range d.Ports {
			fmt.Fprintf(w, "  port %d  %s (%s)  %s\n", p.Num, p.State, p.PhysState, p.LinkLayer)
			for _, gid := range p.GIDs {
				fmt.Fprintf(w, "    gid %-3d %-40s %-11s %s\n", gid.Index, gid.GID, gid.Type, gid.Netdev)
			}
		}
	}
	fmt.Fprintf(w, "RDMA netns mode: %s\n", r.NetnsMode)
	fmt.Fprintf(w, "verbs providers compiled in: %s\n", strings.Join(r.Providers, ", "))
}
