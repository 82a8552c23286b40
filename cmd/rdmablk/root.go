package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// globals are the connection flags shared by every command.
type globals struct {
	traddr   string
	trsvcid  string
	nqn      string
	hostnqn  string
	provider string
	profile  string
	timeout  time.Duration
	queues   int
	depth    int
	json     bool
	netns    string
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "rdmablk",
		Short:         "rdmablk NVMe-oF/RDMA initiator and admin CLI",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&g.traddr, "traddr", "a", "127.0.0.1", "target address (host, or host:port)")
	pf.StringVarP(&g.trsvcid, "trsvcid", "s", "4420", "target port (ignored when --traddr has one)")
	pf.StringVarP(&g.nqn, "nqn", "n", "", "subsystem NQN (default: the first one the discovery log lists)")
	pf.StringVar(&g.hostnqn, "hostnqn", "", "host NQN (default: derived from a random host ID)")
	pf.StringVar(&g.provider, "provider", "auto", "verbs provider: auto, soft or ibverbs")
	pf.StringVar(&g.profile, "profile", "default", "soft provider profile: default or pvrdma")
	pf.DurationVar(&g.timeout, "timeout", 10*time.Second, "connect timeout")
	pf.BoolVar(&g.json, "json", false, "JSON output where supported")
	pf.StringVar(&g.netns, "netns", "", "create the RDMA resources in this network namespace (name under /run/netns, or a path)")
	root.AddCommand(newDiscover(g), newIdentify(g), newRead(g), newWrite(g), newBench(g))
	root.AddCommand(newDevices(g))
	root.AddCommand(newConnect(g), newServe(g))
	root.AddCommand(newDisconnect(g))
	root.AddCommand(newList(g))
	root.AddCommand(newClusterCmd(g), newVolumeCmd(g), newSubsystemCmd(g))
	return root
}

// addr joins traddr and trsvcid unless traddr already has a port.
func (g *globals) addr() string {
	if _, _, err := net.SplitHostPort(g.traddr); err == nil {
		return g.traddr
	}
	return net.JoinHostPort(g.traddr, g.trsvcid)
}

func (g *globals) options() (initiator.Options, error) {
	p, _, err := providers.Open(g.provider, g.profile, nil)
	if err != nil {
		return initiator.Options{}, err
	}
	return g.optionsFor(p), nil
}

func (g *globals) optionsFor(p verbs.Provider) initiator.Options {
	return initiator.Options{
		Provider:       p,
		HostNQN:        g.hostnqn,
		IOQueues:       g.queues,
		QueueDepth:     g.depth,
		ConnectTimeout: g.timeout,
		NetNS:          g.netns,
	}
}

// withOptions runs dial with initiator options on the --provider. Under
// "auto" it tries ibverbs first (when compiled in) and runs dial again on
// soft when ibverbs has no device or dial could not reach the target over
// it (fallBackToSoft); an NVMe-level error is returned as is. The provider
// used is logged at debug level.
func (g *globals) withOptions(dial func(initiator.Options) error) error {
	if g.provider != "auto" || !compiledIn("ibverbs") {
		p, reason, err := providers.Open(g.provider, g.profile, nil)
		if err != nil {
			return err
		}
		slog.Debug("verbs provider", "provider", p.Name(), "reason", reason)
		return dial(g.optionsFor(p))
	}
	p, _, err := providers.Open("ibverbs", g.profile, nil)
	if err == nil {
		slog.Debug("verbs provider", "provider", "ibverbs", "reason", "auto: trying ibverbs first")
		err = dial(g.optionsFor(p))
		if err == nil || !fallBackToSoft(err) {
			return err
		}
		if c, ok := p.(io.Closer); ok {
			c.Close()
		}
	}
	// Here ibverbs did not open (any reason) or could not reach the target.
	s, _, serr := providers.Open("soft", g.profile, nil)
	if serr != nil {
		return serr
	}
	slog.Debug("verbs provider", "provider", "soft", "reason", "auto: ibverbs failed: "+err.Error())
	return dial(g.optionsFor(s))
}

// fallBackToSoft tells whether err from ibverbs means the target is not
// reachable over RDMA: no device, no route (verbs.ErrUnreachable), or a
// connect the CM or provider rejected rather than an NVMe target (a
// *verbs.RejectError without Consumer).
func fallBackToSoft(err error) bool {
	if errors.Is(err, verbs.ErrNoDevice) || errors.Is(err, verbs.ErrUnreachable) {
		return true
	}
	var re *verbs.RejectError
	return errors.As(err, &re) && !re.Consumer
}

func compiledIn(name string) bool {
	for _, n := range providers.Names() {
		if n == name {
			return true
		}
	}
	return false
}

// connect connects to --nqn, or to the first NVM subsystem the discovery
// controller at the same address lists.
func (g *globals) connect(ctx context.Context) (*initiator.Controller, error) {
	var c *initiator.Controller
	err := g.withOptions(func(opts initiator.Options) (err error) {
		c, err = g.connectWith(ctx, opts)
		return err
	})
	return c, err
}

func (g *globals) connectWith(ctx context.Context, opts initiator.Options) (*initiator.Controller, error) {
	nqn := g.nqn
	if nqn == "" {
		entries, err := initiator.Discover(ctx, g.addr(), opts)
		if err != nil {
			return nil, fmt.Errorf("discover (to pick a subsystem; or pass --nqn): %w", err)
		}
		for _, e := range entries {
			if e.SubType == nvme.SubTypeNVM {
				nqn = e.SubNQN
				break
			}
		}
		if nqn == "" {
			return nil, fmt.Errorf("the discovery log at %s lists no NVM subsystem", g.addr())
		}
	}
	return initiator.Connect(ctx, g.addr(), nqn, opts)
}

// openNamespace connects (bounded by twice the connect timeout) and picks
// namespace nsid (0: the first active one). The caller closes the
// controller.
func (g *globals) openNamespace(ctx context.Context, nsid uint32) (*initiator.Controller, *initiator.Namespace, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*g.timeout)
	c, err := g.connect(cctx)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	ns, err := namespace(c, nsid)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, ns, nil
}

// namespace picks --nsid (default: the first active namespace).
func namespace(c *initiator.Controller, nsid uint32) (*initiator.Namespace, error) {
	if nsid != 0 {
		return c.Namespace(nsid)
	}
	nss := c.Namespaces()
	if len(nss) == 0 {
		return nil, fmt.Errorf("controller has no active namespaces")
	}
	return nss[0], nil
}

// parseBytes parses a size with an optional K/M/G/T suffix (1024-based).
func parseBytes(s string) (int64, error) { return catalog.ParseSize(s) }

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func stderrf(format string, a ...any) { fmt.Fprintf(os.Stderr, format, a...) }
