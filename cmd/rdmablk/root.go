package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/internal/version"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// globals are the connection flags shared by every command.
type globals struct {
	traddr  string
	trsvcid string
	nqn     string
	hostnqn string
	hostid  string
	// transport is -t/--transport: rdma or tcp (NVMe/TCP).
	transport string
	// hdrDigest and dataDigest are --hdr-digest / --data-digest
	// (NVMe/TCP CRC32C digests, nvme-cli's flags).
	hdrDigest, dataDigest bool
	provider              string
	profile               string
	timeout               time.Duration
	queues                int
	depth                 int
	json                  bool
	netns                 string
	// dhchap* are the DH-HMAC-CHAP flags (nvme-cli's names).
	dhchapSecret, dhchapCtrlSecret         string
	dhchapSecretFile, dhchapCtrlSecretFile string
	// hostSecret and ctrlSecret are the parsed secrets (dhchap), nil when
	// not given.
	hostSecret, ctrlSecret *auth.Secret

	// ident is the resolved host identity (identity), zero until then.
	ident hostIdentity
	// stderr receives the notes a command prints besides its output
	// (which address it chose); os.Stderr, replaced by tests.
	stderr io.Writer
}

func newRoot() *cobra.Command {
	g := &globals{stderr: os.Stderr}
	root := &cobra.Command{
		Use:           "rdmablk",
		Short:         "rdmablk NVMe-oF/RDMA initiator and admin CLI",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			return checkTransport(g.transport)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&g.traddr, "traddr", "a", "127.0.0.1", "target address (host, or host:port)")
	pf.StringVarP(&g.trsvcid, "trsvcid", "s", "", "target port (ignored when --traddr has one; default 4420, and 8009 for discovery over -t tcp, as nvme-cli)")
	pf.StringVarP(&g.nqn, "nqn", "n", "", "subsystem NQN (default: the first one the discovery log lists)")
	pf.StringVarP(&g.transport, "transport", "t", "rdma", "NVMe-oF transport: rdma or tcp (NVMe/TCP)")
	pf.BoolVarP(&g.hdrDigest, "hdr-digest", "g", false, "NVMe/TCP: ask for header digests (CRC32C)")
	pf.BoolVarP(&g.dataDigest, "data-digest", "G", false, "NVMe/TCP: ask for data digests (CRC32C)")
	pf.StringVar(&g.hostnqn, "hostnqn", "", "host NQN (default: "+etcHostNQN+", else one generated once and stored)")
	pf.StringVar(&g.hostid, "hostid", "", "host ID, a UUID (default: "+etcHostID+", else one generated once and stored)")
	pf.StringVar(&g.provider, "provider", "auto", "verbs provider: auto, soft or ibverbs")
	pf.StringVar(&g.profile, "profile", "default", "soft provider profile: default or pvrdma")
	pf.DurationVar(&g.timeout, "timeout", 10*time.Second, "connect timeout")
	pf.BoolVar(&g.json, "json", false, "JSON output where supported")
	pf.StringVar(&g.netns, "netns", "", "create the RDMA resources in this network namespace (name under /run/netns, or a path)")
	pf.StringVarP(&g.dhchapSecret, "dhchap-secret", "S", "", "DH-HMAC-CHAP host secret (DHHC-1:..., see gen-dhchap-key) for controllers that require authentication")
	pf.StringVarP(&g.dhchapCtrlSecret, "dhchap-ctrl-secret", "C", "", "DH-HMAC-CHAP controller secret: also authenticate the controller (bidirectional)")
	pf.StringVar(&g.dhchapSecretFile, "dhchap-secret-file", "", "read --dhchap-secret from this file (not readable by others)")
	pf.StringVar(&g.dhchapCtrlSecretFile, "dhchap-ctrl-secret-file", "", "read --dhchap-ctrl-secret from this file (not readable by others)")
	root.AddCommand(newDiscover(g), newIdentify(g), newRead(g), newWrite(g), newBench(g))
	root.AddCommand(newDevices(g))
	root.AddCommand(newConnect(g), newServe(g))
	root.AddCommand(newDisconnect(g), newGenDHCHAPKey(g))
	root.AddCommand(newList(g))
	root.AddCommand(newClusterCmd(g), newVolumeCmd(g), newSubsystemCmd(g))
	return root
}

// checkTransport accepts the transports this CLI speaks.
func checkTransport(t string) error {
	if _, err := initiator.ParseTransport(t); err != nil || t == "" {
		return fmt.Errorf("-t/--transport %q: want rdma or tcp", t)
	}
	return nil
}

// tr is the -t transport (checked by the root command).
func (g *globals) tr() initiator.Transport {
	t, _ := initiator.ParseTransport(g.transport)
	return t
}

// addr joins traddr and trsvcid unless traddr already has a port. A
// bracketed IPv6 address without a port ("[::1]") and a bare one ("::1")
// both get trsvcid (default 4420).
func (g *globals) addr() string { return g.addrWith(initiator.DefaultPort) }

// discoveryAddr is the discovery controller's address: as addr, but
// without -s over NVMe/TCP the discovery port 8009 (nvme-cli's default
// for discover -t tcp).
func (g *globals) discoveryAddr() string {
	if g.tr() == initiator.TransportTCP {
		return g.addrWith(initiator.DefaultTCPDiscoveryPort)
	}
	return g.addr()
}

func (g *globals) addrWith(defPort string) string {
	if _, _, err := net.SplitHostPort(g.traddr); err == nil {
		return g.traddr
	}
	host := g.traddr
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	port := g.trsvcid
	if port == "" {
		port = defPort
	}
	return net.JoinHostPort(host, port)
}

func (g *globals) options() (initiator.Options, error) {
	if err := g.identity(); err != nil {
		return initiator.Options{}, err
	}
	if err := g.dhchap(); err != nil {
		return initiator.Options{}, err
	}
	if g.tr() == initiator.TransportTCP {
		return g.optionsFor(nil), nil // no verbs provider over NVMe/TCP
	}
	p, _, err := providers.Open(g.provider, g.profile, nil)
	if err != nil {
		return initiator.Options{}, err
	}
	return g.optionsFor(p), nil
}

func (g *globals) optionsFor(p verbs.Provider) initiator.Options {
	return initiator.Options{
		Transport:      g.tr(),
		Provider:       p,
		HeaderDigest:   g.hdrDigest,
		DataDigest:     g.dataDigest,
		HostNQN:        g.ident.NQN,
		HostID:         g.ident.ID,
		IOQueues:       g.queues,
		QueueDepth:     g.depth,
		ConnectTimeout: g.timeout,
		NetNS:          g.netns,

		DHCHAPSecret:     g.hostSecret,
		DHCHAPCtrlSecret: g.ctrlSecret,
	}
}

// Environment variables that give the DH-HMAC-CHAP secrets when neither
// the flag nor its -file variant does.
const (
	envDHCHAPSecret     = "RDMABLK_DHCHAP_SECRET"
	envDHCHAPCtrlSecret = "RDMABLK_DHCHAP_CTRL_SECRET"
)

// withoutSecretArgs returns args without the --dhchap-secret / -S and
// --dhchap-ctrl-secret / -C flags and their values (in every form pflag
// accepts: "--f v", "--f=v", "-S v", "-Sv", "-S=v").
func withoutSecretArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		switch {
		case a == "--dhchap-secret" || a == "--dhchap-ctrl-secret" || a == "-S" || a == "-C":
			i++ // and its value
		case strings.HasPrefix(a, "--dhchap-secret=") || strings.HasPrefix(a, "--dhchap-ctrl-secret="):
		case len(a) > 2 && (strings.HasPrefix(a, "-S") || strings.HasPrefix(a, "-C")) && a[1] != '-':
		default:
			out = append(out, a)
		}
	}
	return out
}

// dhchap parses the DH-HMAC-CHAP flags into hostSecret and ctrlSecret
// (the flag, its -file variant, else RDMABLK_DHCHAP_SECRET /
// RDMABLK_DHCHAP_CTRL_SECRET).
func (g *globals) dhchap() error {
	one := func(flag, v, file string) (*auth.Secret, error) {
		switch {
		case v != "" && file != "":
			return nil, fmt.Errorf("--%s and --%s-file: give one", flag, flag)
		case file != "":
			s, err := attach.ReadSecretFile(file)
			if err != nil {
				return nil, fmt.Errorf("--%s-file: %w", flag, err)
			}
			return &s, nil
		case v != "":
			s, err := auth.ParseSecret(v)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", flag, err)
			}
			return &s, nil
		}
		return nil, nil
	}
	// The environment is the fallback (readable only by the process's
	// user, unlike the command line): connect hands a background
	// attachment its secrets this way.
	if g.dhchapSecret == "" && g.dhchapSecretFile == "" {
		g.dhchapSecret = os.Getenv(envDHCHAPSecret)
	}
	if g.dhchapCtrlSecret == "" && g.dhchapCtrlSecretFile == "" {
		g.dhchapCtrlSecret = os.Getenv(envDHCHAPCtrlSecret)
	}
	var err error
	if g.hostSecret, err = one("dhchap-secret", g.dhchapSecret, g.dhchapSecretFile); err != nil {
		return err
	}
	if g.ctrlSecret, err = one("dhchap-ctrl-secret", g.dhchapCtrlSecret, g.dhchapCtrlSecretFile); err != nil {
		return err
	}
	if g.ctrlSecret != nil && g.hostSecret == nil {
		return errors.New("--dhchap-ctrl-secret needs --dhchap-secret (bidirectional authentication authenticates the host too)")
	}
	return nil
}

// withOptions runs dial with initiator options on the --provider. Under
// "auto" it tries ibverbs first (when compiled in) and runs dial again on
// soft when ibverbs has no device or dial could not reach the target over
// it (fallBackToSoft); an NVMe-level error is returned as is. The provider
// used is logged at debug level.
func (g *globals) withOptions(dial func(initiator.Options) error) error {
	if err := g.identity(); err != nil {
		return err
	}
	if err := g.dhchap(); err != nil {
		return err
	}
	if g.tr() == initiator.TransportTCP {
		return dial(g.optionsFor(nil)) // no verbs provider over NVMe/TCP
	}
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
	nqn, addr, err := g.resolveTarget(ctx, opts)
	if err != nil {
		return nil, err
	}
	return initiator.Connect(ctx, addr, nqn, opts)
}

// resolveTarget returns the subsystem NQN and the address to connect to:
// --nqn at -a, or else the first NVM subsystem record of the discovery
// log at -a, at the address that record names (TRADDR/TRSVCID, as
// `nvme connect-all` does: in a cluster the subsystem may live on another
// node). A record with a wildcard or empty TRADDR keeps -a's host. When
// the chosen address is not -a, it says so on stderr.
func (g *globals) resolveTarget(ctx context.Context, opts initiator.Options) (nqn, addr string, err error) {
	if g.nqn != "" {
		return g.nqn, g.addr(), nil
	}
	disc := g.discoveryAddr()
	entries, err := initiator.Discover(ctx, disc, opts)
	if err != nil {
		return "", "", fmt.Errorf("discover at %s (to pick a subsystem; or pass --nqn): %w", disc, err)
	}
	e, ok := firstNVM(entries, g.tr())
	if !ok {
		return "", "", fmt.Errorf("the discovery log at %s lists no NVM subsystem reachable over %s", disc, g.tr())
	}
	addr = recordAddr(e, disc)
	slog.Debug("subsystem from the discovery log", "subnqn", e.SubNQN, "traddr", e.TrAddr, "trsvcid", e.TrSvcID,
		"connect", addr, "discovery", disc)
	if addr != disc {
		fmt.Fprintf(g.stderr, "rdmablk: %s is at %s (discovery log at %s)\n", e.SubNQN, addr, disc)
	}
	return e.SubNQN, addr, nil
}

// firstNVM returns the first NVM subsystem record over transport tr.
func firstNVM(entries []nvme.DiscoveryLogEntry, tr initiator.Transport) (nvme.DiscoveryLogEntry, bool) {
	for _, e := range entries {
		if e.SubType == nvme.SubTypeNVM && e.TrType == tr.TrType() {
			return e, true
		}
	}
	return nvme.DiscoveryLogEntry{}, false
}

// recordAddr is the host:port a discovery record names. An empty or
// wildcard TRADDR (a target listening on every address) means the host
// the discovery controller was reached at; an empty TRSVCID, 4420.
func recordAddr(e nvme.DiscoveryLogEntry, discovery string) string {
	host := strings.TrimSpace(e.TrAddr)
	if a, err := netip.ParseAddr(host); host == "" || err == nil && a.IsUnspecified() {
		host, _, _ = net.SplitHostPort(discovery)
	}
	port := strings.TrimSpace(e.TrSvcID)
	if port == "" {
		port = "4420"
	}
	return net.JoinHostPort(host, port)
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
