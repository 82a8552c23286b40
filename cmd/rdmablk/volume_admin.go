package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

func volumeTable(w io.Writer, v any) {
	var vs []catalog.Volume
	switch x := v.(type) {
	case []catalog.Volume:
		vs = x
	case catalog.Volume:
		vs = []catalog.Volume{x}
	}
	fmt.Fprintln(w, "NAME\tSIZE\tBLOCK\tNODE\tSTATE\tREPLICAS\tUUID\tMESSAGE")
	for _, x := range vs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%d/%d\t%s\t%s\n", x.Name, x.Size, x.BlockSize, x.Node, x.State,
			len(x.InSyncNodes()), x.DesiredReplicas(), x.UUID, x.Message)
	}
}

func newVolumeCmd(g *globals) *cobra.Command {
	a := &adminFlags{g: g}
	cmd := &cobra.Command{Use: "volume", Short: "cluster volumes (control API)"}
	a.register(cmd)

	var size, node string
	var bs, replicas int
	var replicaNodes []string
	create := &cobra.Command{Use: "create NAME --size 10G [--node n1] [--replicas 3]", Short: "create a volume", Args: cobra.ExactArgs(1)}
	create.Flags().StringVar(&size, "size", "", "size (K/M/G/T suffixes, powers of 1024)")
	create.Flags().StringVar(&node, "node", "", "owner node (default: the node --api points at)")
	create.Flags().IntVar(&bs, "block-size", 512, "logical block size: 512 or 4096")
	create.Flags().IntVar(&replicas, "replicas", 1, "copies of the data on distinct nodes, 1 to 3 (writes complete when every in-sync copy has them)")
	create.Flags().StringSliceVar(&replicaNodes, "replica-nodes", nil, "nodes of the copies besides the owner's, comma-separated (default: the leader places them on reachable nodes with room)")
	create.RunE = func(cmd *cobra.Command, args []string) error {
		if replicas < 1 || replicas > catalog.MaxReplicas {
			return fmt.Errorf("--replicas %d: want 1 to %d", replicas, catalog.MaxReplicas)
		}
		if len(replicaNodes) > 0 && len(replicaNodes) != replicas-1 {
			return fmt.Errorf("--replica-nodes names %d nodes; --replicas %d needs %d besides the owner", len(replicaNodes), replicas, replicas-1)
		}
		if size == "" {
			return fmt.Errorf("--size is required (e.g. --size 10G)")
		}
		n, err := catalog.ParseSize(size)
		if err != nil {
			return err
		}
		return a.run(func(ctx context.Context, c *api.Client) (any, error) {
			return c.CreateVolume(ctx, api.CreateVolumeRequest{Name: args[0], Size: n, BlockSize: bs, Node: node, Replicas: replicas, ReplicaNodes: replicaNodes})
		}, volumeTable)(cmd, args)
	}
	list := &cobra.Command{Use: "list", Short: "list volumes", Args: cobra.NoArgs}
	list.RunE = a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.Volumes(ctx) }, volumeTable)
	get := &cobra.Command{Use: "get NAME", Short: "show a volume", Args: cobra.ExactArgs(1)}
	get.RunE = func(cmd *cobra.Command, args []string) error {
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.Volume(ctx, args[0]) }, volumeTable)(cmd, args)
	}
	var newSize string
	resize := &cobra.Command{Use: "resize NAME --size 20G", Short: "grow a volume (hosts get a namespace-changed event)", Args: cobra.ExactArgs(1)}
	resize.Flags().StringVar(&newSize, "size", "", "new size")
	resize.RunE = func(cmd *cobra.Command, args []string) error {
		if newSize == "" {
			return fmt.Errorf("--size is required (the new size, e.g. --size 20G)")
		}
		n, err := catalog.ParseSize(newSize)
		if err != nil {
			return err
		}
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.ResizeVolume(ctx, args[0], n) }, volumeTable)(cmd, args)
	}
	del := &cobra.Command{Use: "delete NAME", Short: "delete a volume and its data", Args: cobra.ExactArgs(1)}
	del.RunE = func(cmd *cobra.Command, args []string) error {
		return a.run(func(ctx context.Context, c *api.Client) (any, error) {
			return map[string]string{"deleted": args[0]}, c.DeleteVolume(ctx, args[0])
		}, nil)(cmd, args)
	}
	repair := &cobra.Command{Use: "repair NAME", Short: "clear a volume's error so that its owner retries it now", Args: cobra.ExactArgs(1)}
	repair.RunE = func(cmd *cobra.Command, args []string) error {
		return a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.RepairVolume(ctx, args[0]) }, volumeTable)(cmd, args)
	}
	cmd.AddCommand(create, list, get, resize, repair, del)
	addReplicaCmds(cmd, a)
	return cmd
}
