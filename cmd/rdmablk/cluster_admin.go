package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// adminFlags are the control API flags of the admin commands.
type adminFlags struct {
	g                      *globals
	api                    string // one or more node addresses, comma-separated
	tlsCA, tlsCert, tlsKey string
	tokenFile              string
}

func (a *adminFlags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&a.api, "api", envOr("RDMABLK_API", "127.0.0.1:7420"), "control API of any cluster node (host:port or URL, several comma-separated to fail over; env RDMABLK_API)")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "CA certificate that signed the API's certificate (enables HTTPS)")
	pf.StringVar(&a.tlsCert, "tls-cert", "", "client certificate for the API")
	pf.StringVar(&a.tlsKey, "tls-key", "", "client key for the API")
	pf.StringVar(&a.tokenFile, "api-token-file", os.Getenv("RDMABLK_API_TOKEN_FILE"), "file holding a bearer token for the API (env RDMABLK_API_TOKEN_FILE; or the token itself in RDMABLK_API_TOKEN)")
}

// token returns the bearer token from --api-token-file or RDMABLK_API_TOKEN.
func (a *adminFlags) token() (string, error) {
	if a.tokenFile != "" {
		b, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return "", fmt.Errorf("--api-token-file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return os.Getenv("RDMABLK_API_TOKEN"), nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (a *adminFlags) client() (*api.Client, error) {
	tok, err := a.token()
	if err != nil {
		return nil, err
	}
	var c *api.Client
	if a.tlsCA == "" && a.tlsCert == "" {
		c = api.NewClient(a.api, nil)
	} else {
		tc, err := api.ClientTLS(a.tlsCA, a.tlsCert, a.tlsKey)
		if err != nil {
			return nil, err
		}
		c = api.NewClient(a.api, tc)
	}
	c.SetToken(tok)
	return c, nil
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
		if a.g.json {
			e := json.NewEncoder(out)
			e.SetIndent("", "  ")
			return e.Encode(v)
		}
		if table == nil {
			table = keyValues
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
	status.RunE = a.run(func(ctx context.Context, c *api.Client) (any, error) {
		st, err := c.Status(ctx)
		return statusView{st, listenerViews(st.Nodes)}, err
	},
		func(w io.Writer, v any) {
			s := v.(statusView).StatusResponse
			fmt.Fprintf(w, "node\t%s (%s)\nleader\t%s %s\nterm\t%d\ncommit index\t%d\napplied index\t%d\n\n",
				s.ID, s.State, s.LeaderID, s.LeaderAddr, s.Term, s.CommitIndex, s.AppliedIndex)
			fmt.Fprintln(w, "ID\tSTATE\tLAST CONTACT\tRAFT\tAPI\tVOTER\tLISTENERS\tCNTLIDS")
			api := map[string]string{}
			ls := map[string]int{}
			ids := map[string]string{}
			for _, n := range s.Nodes {
				api[n.ID], ls[n.ID], ids[n.ID] = n.APIAddr, len(n.Listeners), "-"
				if first, last, ok := n.CNTLIDRange(); ok {
					ids[n.ID] = fmt.Sprintf("%d-%d", first, last)
				}
			}
			for _, m := range s.Members { // sorted by ID by the server
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%v\t%d\t%s\n", m.ID, m.State, lastContact(m), m.RaftAddr, api[m.ID], m.Voter, ls[m.ID], ids[m.ID])
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
	cmd.AddCommand(status, join, remove, snap, newTokenCmd(a))
	return cmd
}

// keyValues prints a result map as "key: value" lines sorted by key
// (the plain output of actions without a table; --json prints the map).
func keyValues(w io.Writer, v any) {
	b, err := json.Marshal(v)
	var m map[string]any
	if err != nil || json.Unmarshal(b, &m) != nil {
		fmt.Fprintln(w, v)
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, "%s:\t%v\n", k, m[k])
	}
}

// statusView is the status with enums as names for --json: each node's
// listeners say "rdma"/"ipv4" rather than NVMe's TRTYPE/ADRFAM codes.
type statusView struct {
	api.StatusResponse
	Nodes []nodeView `json:"nodes"`
}

type nodeView struct {
	ID            string         `json:"id"`
	APIAddr       string         `json:"api_addr"`
	RaftAddr      string         `json:"raft_addr"`
	VolumeFSBytes int64          `json:"volume_fs_bytes,omitempty"`
	Listeners     []listenerView `json:"listeners,omitempty"`
	// CNTLIDIndex and the range it picks (catalog.CNTLIDRange): the
	// controller IDs the node hands out from its next start on.
	CNTLIDIndex int    `json:"cntlid_index,omitempty"`
	CNTLIDFirst uint16 `json:"cntlid_first,omitempty"`
	CNTLIDLast  uint16 `json:"cntlid_last,omitempty"`
}

type listenerView struct {
	PortID  uint16 `json:"port_id"`
	TrType  string `json:"trtype"`
	AdrFam  string `json:"adrfam"`
	TrAddr  string `json:"traddr"`
	TrSvcID string `json:"trsvcid"`
}

func listenerViews(ns []catalog.Node) []nodeView {
	out := make([]nodeView, 0, len(ns))
	for _, n := range ns {
		v := nodeView{ID: n.ID, APIAddr: n.APIAddr, RaftAddr: n.RaftAddr, VolumeFSBytes: n.VolumeFSBytes, CNTLIDIndex: n.CNTLIDIndex}
		v.CNTLIDFirst, v.CNTLIDLast, _ = n.CNTLIDRange()
		for _, l := range n.Listeners {
			v.Listeners = append(v.Listeners, listenerView{PortID: l.PortID, TrType: trType(l.TrType), AdrFam: adrFam(l.AdrFam), TrAddr: l.TrAddr, TrSvcID: l.TrSvcID})
		}
		out = append(out, v)
	}
	return out
}

// lastContact renders a member's last contact with the leader: "-" on
// the leader and when it could not be asked (STATE says unreachable; the
// reason is in --json's "error"), else the age.
func lastContact(m api.Member) string {
	switch {
	case m.Error != "", m.State == "Leader":
		return "-"
	case m.LastContact.IsZero():
		return "never"
	}
	return time.Since(m.LastContact).Round(time.Millisecond).String() + " ago"
}

// newTokenCmd is "cluster token create": a fresh bearer token and the
// line for the tokens file (which stores only its hash).
func newTokenCmd(a *adminFlags) *cobra.Command {
	tok := &cobra.Command{Use: "token", Short: "bearer tokens for the control API (docs/security.md)"}
	var role, name string
	create := &cobra.Command{Use: "create --role admin|reader|node --name NAME", Short: "make a token: prints the secret and the tokens_file line", Args: cobra.NoArgs}
	create.Flags().StringVar(&role, "role", "admin", "role: admin, reader or node")
	create.Flags().StringVar(&name, "name", "", "who the token is for (required; no spaces)")
	create.RunE = func(cmd *cobra.Command, _ []string) error {
		switch role {
		case "admin", "reader", "node":
		default:
			return fmt.Errorf("--role %q: want admin, reader or node", role)
		}
		if name == "" || strings.ContainsAny(name, " \t\n") {
			return fmt.Errorf("--name is required (no spaces)")
		}
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return err
		}
		secret := base64.RawURLEncoding.EncodeToString(raw[:])
		sum := sha256.Sum256([]byte(secret))
		line := fmt.Sprintf("%s %s sha256:%s", role, name, hex.EncodeToString(sum[:]))
		out := cmd.OutOrStdout()
		if a.g.json {
			e := json.NewEncoder(out)
			e.SetIndent("", "  ")
			return e.Encode(map[string]string{"token": secret, "tokens_file_line": line, "role": role, "name": name})
		}
		fmt.Fprintf(out, "token (give it to %s; it is not stored anywhere):\n  %s\nline for cluster.auth.tokens_file on every node:\n  %s\n", name, secret, line)
		return nil
	}
	tok.AddCommand(create)
	return tok
}
