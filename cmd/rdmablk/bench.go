package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/internal/bench"
)

func newBench(g *globals) *cobra.Command {
	var cfg bench.Config
	var bs, offset, size string
	var nsid uint32
	var quiet bool
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark a namespace: IOPS, MB/s and latency percentiles",
		Long: "Benchmark a namespace through the asynchronous initiator API. Each job owns\n" +
			"one I/O queue and keeps --qd I/Os outstanding. Writes destroy data.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.BlockSize, err = parseInt(bs); err != nil {
				return fmt.Errorf("--bs: %w", err)
			}
			if cfg.Offset, err = parseBytes(offset); err != nil {
				return fmt.Errorf("--offset: %w", err)
			}
			if cfg.Size, err = parseBytes(size); err != nil {
				return fmt.Errorf("--size: %w", err)
			}
			g.queues = max(g.queues, cfg.Jobs)
			g.depth = max(g.depth, cfg.QueueDepth)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c, ns, err := g.openNamespace(ctx, nsid)
			if err != nil {
				return err
			}
			defer c.Close()
			var progress func(bench.Snapshot)
			var last bench.Snapshot
			if !quiet {
				progress = func(s bench.Snapshot) {
					dt := (s.Elapsed - last.Elapsed).Seconds()
					fmt.Fprintf(os.Stderr, "\r[%5.1fs] %9.0f IOPS %9.1f MB/s  %d errors   ",
						s.Elapsed.Seconds(), float64(s.IOs-last.IOs)/dt, float64(s.Bytes-last.Bytes)/1e6/dt, s.Errors)
					last = s
				}
			}
			res, err := bench.Run(ctx, c, ns, cfg, time.Second, progress)
			if !quiet {
				fmt.Fprintln(os.Stderr)
			}
			if err != nil {
				return err
			}
			if g.json {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{
					"pattern": cfg.Pattern, "rw": cfg.RW, "bs": cfg.BlockSize, "qd": cfg.QueueDepth, "jobs": cfg.Jobs,
					"seconds": res.Elapsed.Seconds(), "ios": res.IOs, "iops": res.IOPS(), "mbps": res.MBps(),
					"lat_p50_us": us(res.Latency.Quantile(0.5)), "lat_p99_us": us(res.Latency.Quantile(0.99)),
					"lat_p999_us": us(res.Latency.Quantile(0.999)), "lat_max_us": us(res.Latency.Max()),
					"errors": res.Errors,
				})
			}
			fmt.Printf("%s %s: bs=%d qd=%d jobs=%d runtime=%.1fs\n", cfg.Pattern, cfg.RW, cfg.BlockSize,
				cfg.QueueDepth, cfg.Jobs, res.Elapsed.Seconds())
			fmt.Printf("  IOPS     : %.0f (reads %d, writes %d)\n", res.IOPS(), res.Reads, res.Writes)
			fmt.Printf("  bandwidth: %.1f MB/s\n", res.MBps())
			fmt.Printf("  latency  : mean %v  p50 %v  p99 %v  p99.9 %v  max %v\n", res.Latency.Mean(),
				res.Latency.Quantile(0.5), res.Latency.Quantile(0.99), res.Latency.Quantile(0.999), res.Latency.Max())
			if res.Errors > 0 {
				return fmt.Errorf("%d I/O errors, first: %v", res.Errors, res.FirstError)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Pattern, "pattern", "rand", "rand or seq")
	f.StringVar(&cfg.RW, "rw", "read", "read, write or mixed")
	f.IntVar(&cfg.ReadPercent, "rwmix", 70, "percent reads for --rw mixed")
	f.StringVar(&bs, "bs", "4k", "I/O size (K/M suffixes)")
	f.IntVar(&cfg.QueueDepth, "qd", 32, "I/Os outstanding per job")
	f.IntVar(&cfg.Jobs, "jobs", 1, "jobs (one I/O queue each)")
	f.DurationVar(&cfg.Duration, "runtime", 10*time.Second, "duration")
	f.StringVar(&offset, "offset", "0", "start of the region (bytes)")
	f.StringVar(&size, "size", "0", "size of the region (bytes, 0: to the end)")
	f.Uint32Var(&nsid, "nsid", 0, "namespace ID (default: the first)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no live progress line")
	return cmd
}

func parseInt(s string) (int, error) {
	n, err := parseBytes(s)
	if err != nil {
		return 0, err
	}
	if n > 1<<31-1 {
		return 0, fmt.Errorf("%s is too large", s)
	}
	return int(n), nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
