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
		Short: "List attachments: frontend, device, queues, in-flight I/O, replays, current IOPS and paths",
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
			fmt.Fprintln(tw, "NAME\tFRONTEND\tDEVICE\tSIZE\tQUEUES\tIN-FLIGHT\tREPLAYS\tIOPS\tPATHS (addr state ana cntlid)")
			for _, e := range entries {
				if e.Status == nil {
					fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\tnot answering (pid %d): %v\n", e.Name, e.PID, e.Err)
					continue
				}
				s := e.Status
				var ps []string
				for _, p := range s.Paths {
					mark := ""
					if p.Preferred {
						mark = "*"
					}
					ps = append(ps, fmt.Sprintf("%s%s %s %s %d", mark, p.Addr, p.State, p.ANA, p.CNTLID))
				}
				dev := s.Device
				if dev == "" {
					dev = "- (socket " + s.Socket + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d×%d\t%d\t%d\t%.0f\t%s\n", s.Name, s.Frontend, dev, humanBytes(s.Size),
					s.Queues, s.QueueDepth, s.InFlight, s.Replays, s.IOPS, strings.Join(ps, "; "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&runDir, "run-dir", attach.DefaultRunDir(), "directory of attachment state and sockets")
	return cmd
}
