package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
)

func newDiscover(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "discover",
		Short: "List the subsystems a discovery controller offers (log page 0x70)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*g.timeout)
			defer cancel()
			var entries []nvme.DiscoveryLogEntry
			err := g.withOptions(func(opts initiator.Options) (err error) {
				entries, err = initiator.Discover(ctx, g.discoveryAddr(), opts)
				return err
			})
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(w, discoveryJSON(g.discoveryAddr(), entries))
			}
			fmt.Fprintf(w, "Discovery Log at %s: %d records\n", g.discoveryAddr(), len(entries))
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "#\tTRTYPE\tADRFAM\tSUBTYPE\tTRADDR\tTRSVCID\tPORTID\tSUBNQN")
			for i, e := range entries {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", i, trType(e.TrType), adrFam(e.AdrFam),
					subType(e.SubType), e.TrAddr, e.TrSvcID, e.PortID, e.SubNQN)
			}
			return tw.Flush()
		},
	}
}

func trType(t uint8) string {
	switch t {
	case nvme.TrTypeRDMA:
		return "rdma"
	case nvme.TrTypeTCP:
		return "tcp"
	case nvme.TrTypeFC:
		return "fc"
	case nvme.TrTypeLoop:
		return "loop"
	}
	return fmt.Sprint(t)
}

func adrFam(a uint8) string {
	switch a {
	case nvme.AdrFamIPv4:
		return "ipv4"
	case nvme.AdrFamIPv6:
		return "ipv6"
	}
	return fmt.Sprint(a)
}

func subType(s uint8) string {
	switch s {
	case nvme.SubTypeNVM:
		return "nvme subsystem"
	case nvme.SubTypeReferral:
		return "referral"
	case nvme.SubTypeCurrentDiscovery:
		return "current discovery subsystem"
	}
	return fmt.Sprint(s)
}
