// Command rdmablkd is the rdmablk NVMe-over-Fabrics target daemon: it
// serves volumes over the NVMe-oF RDMA transport binding.
//
//	rdmablkd                     # embedded default: a sparse 1 GiB volume on 127.0.0.1:4420
//	rdmablkd --config /etc/rdmablk/rdmablkd.yaml
//	rdmablkd --print-config      # the effective configuration as YAML
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

	"github.com/rdmablk/rdmablk/internal/daemon"
)

func main() {
	if err := newRoot().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "rdmablkd:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	v := daemon.NewViper()
	var cfgFile string
	var listen []string
	var printConfig bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:           "rdmablkd",
		Short:         "NVMe-oF/RDMA storage target daemon",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgFile != "" {
				if err := daemon.MergeFile(v, cfgFile); err != nil {
					return err
				}
			}
			if len(listen) > 0 {
				ls := make([]map[string]any, len(listen))
				for i, a := range listen {
					ls[i] = map[string]any{"addr": a}
				}
				v.Set("listeners", ls)
			}
			cfg, err := daemon.Load(v)
			if err != nil {
				return err
			}
			if printConfig {
				return yaml.NewEncoder(cmd.OutOrStdout()).Encode(v.AllSettings())
			}
			log, err := newLogger(cfg.Log)
			if err != nil {
				return err
			}
			stopProfile, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stopProfile()
			return run(cfg, log)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&cfgFile, "config", "c", "", "YAML config file merged over the embedded default")
	f.StringArrayVarP(&listen, "listen", "l", nil, "listen address host:port (repeatable; replaces the configured listeners)")
	f.String("data-dir", "", "directory for volume files with relative paths")
	f.String("provider", "", "verbs provider: auto, soft or ibverbs")
	f.String("profile", "", "soft provider capability profile: default or pvrdma")
	f.String("log-level", "", "debug, info, warn or error")
	f.BoolVar(&printConfig, "print-config", false, "print the effective configuration and exit")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of the daemon's run to this file")
	for flag, key := range map[string]string{
		"data-dir": "data_dir", "provider": "transport.provider",
		"profile": "transport.profile", "log-level": "log.level",
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
	d, err := daemon.Start(cfg, log)
	if err != nil {
		return err
	}
	log.Info("rdmablkd ready", "addrs", d.Addrs())
	<-ctx.Done()
	log.Info("shutting down: draining in-flight I/O")
	if err := d.Close(); err != nil {
		log.Error("shutdown", "err", err)
		return err
	}
	log.Info("stopped cleanly")
	return nil
}
