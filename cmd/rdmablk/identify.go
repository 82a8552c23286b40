package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func newIdentify(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "identify",
		Short: "Connect and show the controller and its namespaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*g.timeout)
			defer cancel()
			c, err := g.connect(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			id := c.Identify()
			type nsOut struct {
				NSID      uint32 `json:"nsid"`
				Bytes     int64  `json:"bytes"`
				BlockSize int    `json:"block_size"`
				Blocks    uint64 `json:"blocks"`
				NGUID     string `json:"nguid"`
			}
			var nss []nsOut
			for _, ns := range c.Namespaces() {
				idn := ns.Identify()
				nss = append(nss, nsOut{ns.NSID(), ns.Size(), ns.BlockSize(), ns.Blocks(), hex.EncodeToString(idn.NGUID[:])})
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"controller": id, "cntlid": c.CNTLID(), "namespaces": nss})
			}
			fmt.Printf("subnqn   : %s\ncntlid   : %d\nmodel    : %s\nserial   : %s\nfirmware : %s\n",
				id.SubNQN, c.CNTLID(), id.MN, id.SN, id.FR)
			fmt.Printf("version  : %d.%d\nmdts     : %d (max transfer %s)\nioccsz   : %d (in-capsule data %d bytes)\nsgls     : %#x\nkas      : %d ms\nio queues: %d\n",
				id.VER>>16, id.VER>>8&0xff, id.MDTS, mdtsBytes(id.MDTS), id.IOCCSZ, max(int(id.IOCCSZ)*16-64, 0),
				id.SGLS, int(id.KAS)*100, c.NumQueues())
			for _, ns := range nss {
				fmt.Printf("namespace %d: %s (%d blocks of %d bytes), nguid %s\n",
					ns.NSID, humanBytes(ns.Bytes), ns.Blocks, ns.BlockSize, ns.NGUID)
			}
			return nil
		},
	}
}

func mdtsBytes(m uint8) string {
	if m == 0 {
		return "unlimited"
	}
	return humanBytes(int64(4096) << m)
}
