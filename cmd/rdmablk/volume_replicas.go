package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// addReplicaCmds adds the replication subcommands to `rdmablk volume`:
// status, replica add/remove, failover.
func addReplicaCmds(vol *cobra.Command, a *adminFlags) {
	var output string
	status := &cobra.Command{Use: "status NAME [-o json]", Short: "show a volume's replicas, their states, the owner, rebuild and resync progress", Args: cobra.ExactArgs(1)}
	status.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json (as --json)")
	status.RunE = func(cmd *cobra.Command, args []string) error {
		switch output {
		case "table", "":
		case "json":
			a.g.json = true
		default:
			return fmt.Errorf("-o %q: want table or json", output)
		}
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.VolumeStatus(ctx, args[0]) }, volumeStatusTable)(cmd, args)
	}

	replica := &cobra.Command{Use: "replica", Short: "add or remove a volume's copies"}
	var addNode, rmNode string
	add := &cobra.Command{Use: "add NAME --node N", Short: "add a copy on node N (it is rebuilt in full, then joins in sync)", Args: cobra.ExactArgs(1)}
	add.Flags().StringVar(&addNode, "node", "", "node that gets the new copy")
	add.RunE = func(cmd *cobra.Command, args []string) error {
		if addNode == "" {
			return fmt.Errorf("--node is required (the node that gets the new copy)")
		}
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.AddReplica(ctx, args[0], addNode) }, volumeTable)(cmd, args)
	}
	rm := &cobra.Command{Use: "remove NAME --node N", Short: "remove the copy on node N (never the owner's, never the last in-sync one)", Args: cobra.ExactArgs(1)}
	rm.Flags().StringVar(&rmNode, "node", "", "node whose copy goes")
	rm.RunE = func(cmd *cobra.Command, args []string) error {
		if rmNode == "" {
			return fmt.Errorf("--node is required (the node whose copy goes)")
		}
		return a.run(func(ctx context.Context, c *api.Client) (any, error) {
			return map[string]string{"volume": args[0], "removed_replica": rmNode}, c.RemoveReplica(ctx, args[0], rmNode)
		}, nil)(cmd, args)
	}
	replica.AddCommand(add, rm)

	var to string
	failover := &cobra.Command{Use: "failover NAME [--to NODE]", Short: "move a volume's ownership to another in-sync copy (hosts with multipath follow the ANA change)", Args: cobra.ExactArgs(1)}
	failover.Flags().StringVar(&to, "to", "", "new owner, a node with an in-sync copy (default: the leader picks one that is reachable)")
	failover.RunE = func(cmd *cobra.Command, args []string) error {
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.Failover(ctx, args[0], to) }, volumeTable)(cmd, args)
	}
	vol.AddCommand(status, replica, failover)
}

// volumeStatusTable prints a volume's summary line, a resync line while
// the owner resyncs the other in-sync copies, then one row per copy:
// node, state, owner marker, rebuild progress and ETA.
func volumeStatusTable(w io.Writer, v any) {
	st := v.(api.VolumeStatus)
	fmt.Fprintf(w, "volume %s: %d bytes, %s, owner %s (epoch %d), %d of %d replicas in sync\n",
		st.Volume.Name, st.Volume.Size, st.Volume.State, st.Owner, st.Epoch, st.InSync, st.Replicas)
	if rs := st.Resync; rs != nil {
		eta := "unknown"
		if rs.ETASeconds != nil {
			eta = time.Duration(*rs.ETASeconds * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(w, "resyncing from %s to %s: %.1f%% (%s of %s), ETA %s\n", rs.Source, strings.Join(rs.Targets, ","),
			rs.Percent, mib(rs.Progress.Copied), mib(rs.Progress.Total), eta)
	}
	fmt.Fprintln(w, "NODE\tSTATE\tOWNER\tREBUILD\tETA\tMESSAGE")
	for _, r := range st.ReplicaStatus {
		owner, rebuild, eta := "", "-", "-"
		if r.Owner {
			owner = "*"
		}
		if r.Rebuild != nil {
			rebuild = fmt.Sprintf("%.1f%%", r.Percent)
			if r.Rebuild.Full {
				rebuild += " (full)"
			}
			if r.ETASeconds != nil {
				eta = time.Duration(*r.ETASeconds * float64(time.Second)).Round(time.Second).String()
			}
		} else if r.State == catalog.ReplicaSyncing {
			rebuild = "pending"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Node, r.State, owner, rebuild, eta, strings.ReplaceAll(r.Message, "\t", " "))
	}
}

// mib formats a byte count in MiB with one decimal.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
