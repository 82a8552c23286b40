package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

func newIdentify(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "identify",
		Short: "Connect and show the controller and its namespaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*g.timeout)
			defer cancel()
			c, err := g.connect(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			out := identifyOut(c)
			if g.json {
				return writeJSON(w, out)
			}
			xfer := "unlimited"
			if out.MaxTransferBytes > 0 {
				xfer = humanBytes(out.MaxTransferBytes)
			}
			fmt.Fprintf(w, "subnqn   : %s\ncntlid   : %d\nmodel    : %s\nserial   : %s\nfirmware : %s\n",
				out.SubNQN, out.CNTLID, out.Model, out.Serial, out.Firmware)
			fmt.Fprintf(w, "version  : %s\nmdts     : %d (max transfer %s)\nioccsz   : %d (in-capsule data %d bytes)\nsgls     : %s\nkas      : %d ms\nio queues: %d\n",
				out.Version, out.MDTS, xfer, out.IOCCSZ, out.InCapsuleBytes, out.SGLS, out.KeepAliveMS, out.IOQueues)
			for _, ns := range out.Namespaces {
				fmt.Fprintf(w, "namespace %d: %s (%d blocks of %d bytes), nguid %s\n",
					ns.NSID, humanBytes(ns.Bytes), ns.Blocks, ns.BlockSize, ns.NGUID)
			}
			return nil
		},
	}
}
