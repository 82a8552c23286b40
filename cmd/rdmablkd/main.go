// Command rdmablkd is the rdmablk NVMe-over-Fabrics target daemon: it
// serves volumes over the NVMe-oF RDMA transport binding.
//
//	rdmablkd                     # embedded default: a sparse 1 GiB volume on 127.0.0.1:4420 (RDMA) and 127.0.0.1:8009 (NVMe/TCP)
//	rdmablkd --config /etc/rdmablk/rdmablkd.yaml
//	rdmablkd --print-config      # the effective configuration as YAML
//	rdmablkd --version           # version, commit, Go version, build tags
//
// Every start-up error is one line per problem naming the setting
// (rdmablkd: listeners[0].addr "…" (--listen): address already in use …),
// exit status 1. Under systemd (Type=notify) it sends READY=1 once it
// listens and STOPPING=1 when it starts draining; /metrics is served on
// metrics.listen (127.0.0.1:9420 by default). SIGUSR1 writes every
// goroutine's stack to a file in data_dir and logs its name (a daemon
// that seems stuck, without stopping it).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/rdmablk/rdmablk/internal/cpuprof"
	"github.com/rdmablk/rdmablk/internal/daemon"
	"github.com/rdmablk/rdmablk/internal/version"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		// One line per problem, each naming the program.
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(os.Stderr, "rdmablkd:", line)
		}
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	v := daemon.NewViper()
	var cfgFile string
	var listen []string
	var printConfig bool
	var profiles cpuprof.Paths
	cmd := &cobra.Command{
		Use:           "rdmablkd",
		Short:         "NVMe-oF/RDMA storage target daemon",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgFile != "" {
				if err := daemon.MergeFile(v, cfgFile); err != nil {
					return err
				}
			}
			cfg, err := daemon.Load(v, listen)
			if err != nil {
				return err
			}
			if printConfig {
				// Secrets (dhchap_secret, dhchap_ctrl_secret) redacted.
				return yaml.NewEncoder(cmd.OutOrStdout()).Encode(daemon.PrintableSettings(v.AllSettings()))
			}
			log, err := newLogger(cfg.Log)
			if err != nil {
				return err
			}
			stopProfiles, err := profiles.Start()
			if err != nil {
				return err
			}
			defer stopProfiles()
			return run(cfg, log)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfgFile, "config", "c", "", "YAML config file merged over the embedded default")
	f.StringArrayVarP(&listen, "listen", "l", nil, "listen address IP:port or [IPv6]:port (repeatable; replaces the configured listeners and RDMABLKD_LISTENERS)")
	f.String("data-dir", "", "directory for volume files with relative paths")
	f.String("provider", "", "verbs provider: auto, soft or ibverbs")
	f.String("profile", "", "soft provider capability profile: default or pvrdma")
	f.String("log-level", "", "debug, info, warn or error")
	f.String("metrics-listen", "", `address of the /metrics endpoint ("" in the config: off)`)
	f.BoolVar(&printConfig, "print-config", false, "print the effective configuration and exit")
	f.StringVar(&profiles.CPU, "cpuprofile", "", "write a Go CPU profile of the daemon's run to this file")
	f.StringVar(&profiles.Mem, "memprofile", "", "write a Go allocation profile of the daemon's run to this file when it stops (go tool pprof -sample_index=alloc_space)")
	f.StringVar(&profiles.Trace, "trace", "", "write a Go execution trace of the daemon's run to this file (go tool trace; costly: for short diagnostic runs)")
	for flag, key := range map[string]string{
		"data-dir": "data_dir", "provider": "transport.provider",
		"profile": "transport.profile", "log-level": "log.level",
		"metrics-listen": "metrics.listen",
	} {
		if err := v.BindPFlag(key, f.Lookup(flag)); err != nil {
			panic(err)
		}
	}
	return cmd
}

func newLogger(c daemon.LogConfig) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log.level %q: %w", c.Level, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.Format) {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "", "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log.format %q: want text or json", c.Format)
}

func run(cfg *daemon.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	dumpStacksOn(cfg.DataDir, log)
	daemon.RaiseFileLimit(log)
	d, err := daemon.Start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("rdmablkd ready", "addrs", d.Addrs(), "version", version.Get().String())
	status := "serving NVMe-oF/RDMA on " + strings.Join(d.Addrs(), " ")
	if m := d.MetricsAddr(); m != "" {
		status += "; metrics on http://" + m + "/metrics"
	}
	if err := daemon.Notify("READY=1\nSTATUS=" + status); err != nil {
		log.Warn("systemd readiness", "err", err)
	}
	<-ctx.Done()
	log.Info("shutting down: draining in-flight I/O")
	if err := daemon.Notify("STOPPING=1\nSTATUS=draining in-flight I/O"); err != nil {
		log.Warn("systemd stopping", "err", err)
	}
	if err := d.Close(); err != nil {
		log.Error("shutdown", "err", err)
		return err
	}
	log.Info("stopped cleanly")
	return nil
}
