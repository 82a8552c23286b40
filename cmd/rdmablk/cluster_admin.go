package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/api"
)

// adminFlags are the control API flags of the admin commands.
type adminFlags struct {
	g                      *globals
	api                    string
	tlsCA, tlsCert, tlsKey string
}

func (a *adminFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&a.api, "api", envOr("RDMABLK_API", "127.0.0.1:7420"), "control API of any cluster node (host:port or URL; env RDMABLK_API)")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "CA certificate that signed the API's certificate (enables HTTPS)")
	pf.StringVar(&a.tlsCert, "tls-cert", "", "client certificate for the API")
	pf.StringVar(&a.tlsKey, "tls-key", "", "client key for the API")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (a *adminFlags) client() (*api.Client, error) {
	if a.tlsCA == "" && a.tlsCert == "" {
		return api.NewClient(a.api, nil), nil
	}
	tc, err := api.ClientTLS(a.tlsCA, a.tlsCert, a.tlsKey)
	if err != nil {
		return nil, err
	}
	return api.NewClient(a.api, tc), nil
}

func (a *adminFlags) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), a.g.timeout+20e9)
}

// run wraps an admin action: client, context, output (JSON with --json,
// else the table function).
func (a *adminFlags) run(fn func(ctx context.Context, c *api.Client) (any, error), table func(w io.Writer, v any)) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		c, err := a.client()
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := a.ctx()
		defer cancel()
		v, err := fn(ctx, c)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if a.g.json || table == nil {
			e := json.NewEncoder(out)
			e.SetIndent("", "  ")
			return e.Encode(v)
		}
		tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
		table(tw, v)
		return tw.Flush()
	}
}

func newClusterCmd(g *globals) *cobra.Command {
	a := &adminFlags{g: g}
	cmd := &cobra.Command{Use: "cluster", Short: "cluster membership and status (control API)"}
	a.register(cmd)
	status := &cobra.Command{Use: "status", Short: "leader, term, members, commit and applied index", Args: cobra.NoArgs}
	status.RunE = a.run(func(ctx context.Context, c *api.Client) (any, error) { return c.Status(ctx) },
		func(w io.Writer, v any) {
			s := v.(api.StatusResponse)
			fmt.Fprintf(w, "node\t%s (%s)\nleader\t%s %s\nterm\t%d\ncommit index\t%d\napplied index\t%d\n\n",
				s.ID, s.State, s.LeaderID, s.LeaderAddr, s.Term, s.CommitIndex, s.AppliedIndex)
			fmt.Fprintln(w, "ID\tRAFT\tAPI\tVOTER\tLISTENERS")
			api := map[string]string{}
			ls := map[string]int{}
			for _, n := range s.Nodes {
				api[n.ID], ls[n.ID] = n.APIAddr, len(n.Listeners)
			}
			for _, m := range s.Members {
				fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%d\n", m.ID, m.RaftAddr, api[m.ID], m.Voter, ls[m.ID])
			}
		})
	var id, raftAddr, apiAddr string
	join := &cobra.Command{Use: "join", Short: "add a node as a voter (the node normally joins itself via cluster.join)", Args: cobra.NoArgs}
	join.Flags().StringVar(&id, "id", "", "node ID")
	join.Flags().StringVar(&raftAddr, "raft-addr", "", "node's raft address")
	join.Flags().StringVar(&apiAddr, "api-addr", "", "node's API address")
	join.RunE = a.run(func(ctx context.Context, c *api.Client) (any, error) {
		n := apiNode(id, raftAddr, apiAddr)
		return map[string]string{"joined": id}, c.Join(ctx, n)
	}, nil)
	remove := &cobra.Command{Use: "remove NODE", Short: "remove a node (it must own no volumes or subsystems)", Args: cobra.ExactArgs(1)}
	remove.RunE = func(cmd *cobra.Command, args []string) error {
		return a.run(func(ctx context.Context, c *api.Client) (any, error) {
			return map[string]string{"removed": args[0]}, c.Remove(ctx, args[0])
		}, nil)(cmd, args)
	}
	snap := &cobra.Command{Use: "snapshot", Short: "make the node take a raft snapshot now", Args: cobra.NoArgs}
	snap.RunE = a.run(func(ctx context.Context, c *api.Client) (any, error) {
		return map[string]string{"snapshot": "taken"}, c.Snapshot(ctx)
	}, nil)
	cmd.AddCommand(status, join, remove, snap)
	return cmd
}
