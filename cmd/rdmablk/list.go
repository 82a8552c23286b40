package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/internal/attach"
)

func newList(g *globals) *cobra.Command {
	var runDir string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List attachments: device, socket, paths and their state, queues, in-flight I/O",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, err := attach.List(runDir)
			if err != nil {
				return err
			}
			if g.json {
				var out []*attach.Status
				for _, e := range entries {
					if e.Status != nil {
						out = append(out, e.Status)
					}
				}
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDEVICE\tSOCKET\tSIZE\tPATHS (addr state ana cntlid queues)\tIN-FLIGHT\tREPLAYS")
			for _, e := range entries {
				if e.Status == nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\tnot answering (pid %d): %v\t-\t-\n", e.Name, e.PID, e.Err)
					continue
				}
				s := e.Status
				var ps []string
				for _, p := range s.Paths {
					mark := ""
					if p.Preferred {
						mark = "*"
					}
					ps = append(ps, fmt.Sprintf("%s%s %s %s %d %d", mark, p.Addr, p.State, p.ANA, p.CNTLID, p.Queues))
				}
				dev := s.Device
				if dev == "" {
					dev = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.Name, dev, s.Socket, humanBytes(s.Size), strings.Join(ps, "; "), s.InFlight, s.Replays)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&runDir, "run-dir", attach.DefaultRunDir(), "directory of attachment state and sockets")
	return cmd
}
