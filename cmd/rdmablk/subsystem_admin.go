package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

func subsystemTable(w io.Writer, v any) {
	var ss []catalog.Subsystem
	switch x := v.(type) {
	case []catalog.Subsystem:
		ss = x
	case catalog.Subsystem:
		ss = []catalog.Subsystem{x}
	}
	fmt.Fprintln(w, "NQN\tNODE\tALLOW-ANY\tHOSTS\tNAMESPACES")
	for _, s := range ss {
		var ids []uint32
		for id := range s.Namespaces {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var ns []string
		for _, id := range ids {
			ns = append(ns, fmt.Sprintf("%d=%s", id, s.Namespaces[id]))
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\n", s.NQN, s.Node, s.AllowAnyHost, strings.Join(s.Hosts, ","), strings.Join(ns, ","))
	}
}

func newSubsystemCmd(g *globals) *cobra.Command {
	a := &adminFlags{g: g}
	cmd := &cobra.Command{Use: "subsystem", Short: "cluster NVM subsystems (control API)"}
	a.register(cmd)
	one := func(use, short string, n int, fn func(ctx context.Context, c *api.Client, args []string) (any, error), table func(io.Writer, any)) *cobra.Command {
		c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(n)}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			return a.run(func(ctx context.Context, cl *api.Client) (any, error) { return fn(ctx, cl, args) }, table)(cmd, args)
		}
		return c
	}
	var req api.CreateSubsystemRequest
	create := one("create NQN [--node n2] [--allow-any-host] [--host NQN ...]", "create a subsystem", 1,
		func(ctx context.Context, c *api.Client, args []string) (any, error) {
			req.NQN = args[0]
			return c.CreateSubsystem(ctx, req)
		}, subsystemTable)
	create.Flags().StringVar(&req.Node, "node", "", "serving node (default: the node --api points at)")
	create.Flags().BoolVar(&req.AllowAnyHost, "allow-any-host", false, "admit every host")
	create.Flags().StringArrayVar(&req.Hosts, "host", nil, "allowed host NQN (repeatable)")
	create.Flags().StringVar(&req.Serial, "serial", "", "serial number (default derived from the NQN)")
	create.Flags().StringVar(&req.Model, "model", "", "model number")
	var nsid uint32
	addNS := one("add-ns NQN VOLUME [--nsid N]", "export a volume as a namespace", 2,
		func(ctx context.Context, c *api.Client, args []string) (any, error) {
			id, err := c.AddNamespace(ctx, args[0], nsid, args[1])
			return map[string]any{"nqn": args[0], "nsid": id, "volume": args[1]}, err
		}, nil)
	addNS.Flags().Uint32Var(&nsid, "nsid", 0, "namespace ID (0 = lowest free)")
	cmd.AddCommand(create,
		one("list", "list subsystems", 0, func(ctx context.Context, c *api.Client, _ []string) (any, error) { return c.Subsystems(ctx) }, subsystemTable),
		one("get NQN", "show a subsystem", 1, func(ctx context.Context, c *api.Client, args []string) (any, error) { return c.Subsystem(ctx, args[0]) }, subsystemTable),
		one("delete NQN", "delete a subsystem (volumes stay)", 1, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			return map[string]string{"deleted": args[0]}, c.DeleteSubsystem(ctx, args[0])
		}, nil),
		addNS,
		one("remove-ns NQN NSID", "detach a namespace", 2, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			id, err := strconv.ParseUint(args[1], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("nsid %q: %w", args[1], err)
			}
			return map[string]any{"removed": id}, c.RemoveNamespace(ctx, args[0], uint32(id))
		}, nil),
		one("add-host NQN HOSTNQN", "allow a host", 2, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			return map[string]string{"added": args[1]}, c.AddHost(ctx, args[0], args[1])
		}, nil),
		one("remove-host NQN HOSTNQN", "disallow a host", 2, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			return map[string]string{"removed": args[1]}, c.RemoveHost(ctx, args[0], args[1])
		}, nil),
		one("allow-any NQN true|false", "admit every host, or only the listed ones", 2, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			b, err := strconv.ParseBool(args[1])
			if err != nil {
				return nil, err
			}
			return map[string]bool{"allow_any_host": b}, c.SetAllowAnyHost(ctx, args[0], b)
		}, nil),
		one("ana NQN NODE STATE", "record the ANA state of the subsystem on a node", 3, func(ctx context.Context, c *api.Client, args []string) (any, error) {
			return map[string]string{"ana": args[2]}, c.SetANAState(ctx, args[0], args[1], args[2])
		}, nil),
	)
	return cmd
}
