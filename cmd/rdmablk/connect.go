package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/internal/cpuprof"
	"github.com/rdmablk/rdmablk/internal/threadsched"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// attachFlags are the flags of connect.
type attachFlags struct {
	cfg        attach.Config
	paths      []string
	runDir     string
	foreground bool
	logLevel   string
	profiles   cpuprof.Paths // --cpuprofile, --memprofile, --trace: acted on by the foreground process
	sched      string        // --sched, the attachment process's thread policy
}

func newConnect(g *globals) *cobra.Command {
	af := &attachFlags{}
	cmd := &cobra.Command{
		Use:   "connect",
		Short: "Attach a namespace as /dev/ublkbN (ublk) or /dev/nbdX (NBD)",
		Long: `connect opens a reconnecting, multipath initiator session to the subsystem
(--traddr plus any --path) and gives the namespace a kernel block device
through a frontend (--frontend): ublk (/dev/ublkbN, Linux ≥ 6.0 with
ublk_drv; survives a crash of the attachment process: restarting it
recovers the same device) or nbd. The default, auto, takes ublk when
/dev/ublk-control exists (as root it tries modprobe ublk_drv once) and nbd
otherwise, and says which and why.

The namespace is also an NBD export on a unix socket (--socket; --tcp adds
a TCP listener); with nbd it is attached to a free /dev/nbdX when the kernel
has the nbd module (--device). Without the module the export still serves
NBD clients: fio --ioengine=nbd, qemu-img, or nbd-client -unix SOCKET
/dev/nbd0 -N NAME.

By default connect starts the attachment in the background and returns once
it is ready; --foreground keeps it in this process until SIGTERM or
'rdmablk disconnect NAME'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := threadsched.Check(af.sched); err != nil {
				return fmt.Errorf("--sched: %w", err)
			}
			if !af.foreground {
				return connectBackground(cmd, af, g)
			}
			return connectForeground(cmd.Context(), af, g)
		},
	}
	f := cmd.Flags()
	f.StringVar(&af.cfg.Name, "name", "", "attachment name (default: derived from the NQN)")
	f.StringArrayVar(&af.paths, "path", nil, "another address of the same subsystem (multipath; repeatable)")
	f.Uint32Var(&af.cfg.NSID, "nsid", 0, "namespace ID (default: the first)")
	f.StringVar(&af.cfg.Socket, "socket", "", "NBD unix socket (default: RUNDIR/NAME.sock)")
	f.StringVar(&af.cfg.TCP, "tcp", "", "also serve NBD on this TCP address")
	f.StringVar(&af.cfg.Frontend, "frontend", attach.FrontendAuto, "block device frontend: auto (ublk when /dev/ublk-control exists, else nbd), ublk or nbd")
	f.StringVar(&af.cfg.Device, "device", "auto", "kernel device: auto, none (NBD export only), /dev/nbdX or /dev/ublkbN")
	f.DurationVar(&af.cfg.ReconnectDelay, "reconnect-delay", initiator.DefaultReconnectDelay, "wait between reconnect attempts")
	f.DurationVar(&af.cfg.CtrlLossTimeout, "ctrl-loss-tmo", initiator.DefaultCtrlLossTimeout, "fail I/O with EIO after no path for this long (negative: never)")
	f.DurationVar(&af.cfg.IOTimeout, "io-timeout", 0, "kernel nbd request timeout (0: kernel default)")
	f.StringVar(&af.cfg.NetNS, "netns", "", "network namespace for the RDMA resources (see README: rdma system set netns exclusive)")
	f.IntVar(&af.cfg.Queues, "queues", 0, fmt.Sprintf("I/O queues per path, shared by all NBD requests; one kernel NBD connection each (default min(%d, CPUs))", initiator.DefaultIOQueues))
	f.IntVar(&af.cfg.QueueDepth, "queue-depth", 0, fmt.Sprintf("commands in flight per queue (default %d)", initiator.DefaultQueueDepth))
	f.StringVar(&af.runDir, "run-dir", attach.DefaultRunDir(), "directory of attachment state and sockets")
	f.BoolVar(&af.foreground, "foreground", false, "run the attachment in this process")
	f.StringVar(&af.logLevel, "log-level", "info", "log level (debug, info, warn, error)")
	f.StringVar(&af.profiles.CPU, "cpuprofile", "", "write a Go CPU profile of the attachment process's run to this file (written when it stops)")
	f.StringVar(&af.profiles.Mem, "memprofile", "", "write a Go allocation profile of the attachment process's run to this file (written when it stops; go tool pprof -sample_index=alloc_space)")
	f.StringVar(&af.profiles.Trace, "trace", "", "write a Go execution trace of the attachment process's run to this file (go tool trace; costly: for short diagnostic runs)")
	f.StringVar(&af.sched, "sched", threadsched.Batch, schedUsage)
	return cmd
}

// defaultName derives an attachment name from the NQN's last component.
func defaultName(nqn string) string {
	out := []byte{}
	for i := len(nqn) - 1; i >= 0; i-- {
		c := nqn[i]
		if c == ':' || c == '.' && len(out) > 0 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			out = append([]byte{c}, out...)
		}
	}
	if len(out) == 0 {
		return "vol"
	}
	return string(out)
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// schedUsage is the help of --sched (connect and serve).
const schedUsage = "scheduling policy of the attachment process's threads: batch (SCHED_BATCH: its I/O threads do not preempt the task that wakes them; fewer context switches on small guests) or normal"

func connectForeground(ctx context.Context, af *attachFlags, g *globals) error {
	log := newLogger(af.logLevel)
	if err := threadsched.Apply(af.sched); err != nil {
		return err
	}
	stopProfiles, err := af.profiles.Start()
	if err != nil {
		return err
	}
	defer stopProfiles()
	opts, err := g.options()
	if err != nil {
		return err
	}
	opts.Logger = log
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cctx, cancel := context.WithTimeout(ctx, 2*g.timeout)
	// The subsystem and where it lives: the discovery record's address,
	// as nvme connect-all does (root.go resolveTarget).
	nqn, addr, err := g.resolveTarget(cctx, opts)
	cancel()
	if err != nil {
		return err
	}
	cfg := af.cfg
	cfg.NQN = nqn
	if cfg.Name == "" {
		cfg.Name = defaultName(nqn)
	}
	cfg.Paths = append([]string{addr}, af.paths...)
	return attach.Run(ctx, []attach.Config{cfg}, opts, af.runDir, log)
}

// connectBackground re-executes connect with --foreground in a new
// session, logging to RUNDIR/NAME.log, and waits until it is registered.
func connectBackground(cmd *cobra.Command, af *attachFlags, g *globals) error {
	opts, err := g.options()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*g.timeout)
	nqn, _, err := g.resolveTarget(ctx, opts)
	cancel()
	if err != nil {
		return err
	}
	name := af.cfg.Name
	if name == "" {
		name = defaultName(nqn)
	}
	if err := os.MkdirAll(af.runDir, 0o755); err != nil {
		return err
	}
	if pid, ok := attach.Running(af.runDir, name); ok {
		return fmt.Errorf("attachment %q is already running in %s (pid %d; rdmablk disconnect %s)", name, af.runDir, pid, name)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// Secrets go to the child by environment, not on its command line
	// (which anyone can read in ps for as long as the attachment runs).
	args := withoutSecretArgs(os.Args[1:])
	args = append(args, "--foreground", "--name", name, "--nqn", nqn, "--run-dir", af.runDir)
	logPath := filepath.Join(af.runDir, name+".log")
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	logStart, _ := lf.Seek(0, io.SeekEnd)
	child := exec.Command(self, args...)
	child.Stdout, child.Stderr = lf, lf
	child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	child.Env = os.Environ()
	if opts.DHCHAPSecret != nil {
		child.Env = append(child.Env, envDHCHAPSecret+"="+opts.DHCHAPSecret.Encode())
	}
	if opts.DHCHAPCtrlSecret != nil {
		child.Env = append(child.Env, envDHCHAPCtrlSecret+"="+opts.DHCHAPCtrlSecret.Encode())
	}
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(3*g.timeout + 10*time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			if msg := startError(logPath, logStart); msg != "" {
				return fmt.Errorf("attachment %s failed to start: %s (log: %s)", name, msg, logPath)
			}
			return fmt.Errorf("attachment %s exited during start (%v); see %s", name, err, logPath)
		case <-deadline:
			return fmt.Errorf("attachment %s not ready in time; see %s", name, logPath)
		case <-tick.C:
		}
		entries, _ := attach.List(af.runDir)
		for _, e := range entries {
			// The state file must be the new process's: after a crash the
			// old one stays until the new process registers, and the
			// control socket answers before that.
			if e.Name == name && e.Status != nil && e.Status.PID == e.PID {
				st := e.Status
				fmt.Printf("%s: %s (%d-byte blocks), %d queues × %d, NBD socket %s, pid %d\n",
					name, humanBytes(st.Size), st.BlockSize, st.Queues, st.QueueDepth, st.Socket, e.PID)
				fmt.Printf("frontend: %s (%s)\n", st.Frontend, st.FrontendNote)
				if st.Device != "" {
					fmt.Printf("device: %s\n", st.Device)
				} else {
					fmt.Printf("device: none: %s\n", st.DeviceNote)
				}
				_ = child.Process.Release()
				return nil
			}
		}
	}
}

// startError returns the error line the attachment process printed
// ("rdmablk: ...") in its log after offset, without the prefix; "" when
// there is none.
func startError(logPath string, offset int64) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "rdmablk: "); ok {
			last = l
		}
	}
	return last
}

// newServe runs the attachments of a configuration file (the service mode).
func newServe(g *globals) *cobra.Command {
	var cfgPath, logLevel, sched string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the attachments of a configuration file until SIGTERM (the systemd service)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := threadsched.Apply(sched); err != nil {
				return fmt.Errorf("--sched: %w", err)
			}
			f, err := attach.LoadFile(cfgPath)
			if err != nil {
				return err
			}
			log := newLogger(logLevel)
			p, reason, err := providers.Open(f.Provider, f.Profile, nil)
			if err != nil {
				return err
			}
			log.Info("verbs provider", "provider", f.Provider, "reason", reason)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			err = attach.Run(ctx, f.Attachments, initiator.Options{Provider: p, ConnectTimeout: g.timeout, Logger: log}, f.RunDir, log)
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&cfgPath, "config", "c", "/etc/rdmablk/attachments.yaml", "attachments configuration file")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level")
	cmd.Flags().StringVar(&sched, "sched", threadsched.Batch, schedUsage)
	return cmd
}
