package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

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
			w := cmd.OutOrStdout()
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
			if err := checkBenchFlags(cfg); err != nil {
				return err
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
			errw := cmd.ErrOrStderr()
			live := !quiet && isTerminal(errw)
			if live {
				progress = func(s bench.Snapshot) {
					dt := (s.Elapsed - last.Elapsed).Seconds()
					fmt.Fprintf(errw, "\r[%5.1fs] %9.0f IOPS %9.1f MB/s  %d errors   ",
						s.Elapsed.Seconds(), float64(s.IOs-last.IOs)/dt, float64(s.Bytes-last.Bytes)/1e6/dt, s.Errors)
					last = s
				}
			}
			res, err := bench.Run(ctx, c, ns, cfg, time.Second, progress)
			if live {
				fmt.Fprintln(errw)
			}
			if err != nil {
				return err
			}
			if res.QueueDepth < cfg.QueueDepth {
				fmt.Fprintf(cmd.ErrOrStderr(), "rdmablk: --qd %d is more than the I/O queue holds: ran at qd=%d (the depth negotiated with the target)\n",
					cfg.QueueDepth, res.QueueDepth)
			}
			if g.json {
				return writeJSON(w, map[string]any{
					"pattern": cfg.Pattern, "rw": cfg.RW, "rwmix_read": cfg.ReadPercent, "bs": cfg.BlockSize,
					"qd": res.QueueDepth, "qd_requested": cfg.QueueDepth, "jobs": cfg.Jobs,
					"reads": res.Reads, "writes": res.Writes, "lat_mean_us": us(res.Latency.Mean()),
					"seconds": res.Elapsed.Seconds(), "ios": res.IOs, "iops": res.IOPS(), "mbps": res.MBps(),
					"lat_p50_us": us(res.Latency.Quantile(0.5)), "lat_p99_us": us(res.Latency.Quantile(0.99)),
					"lat_p999_us": us(res.Latency.Quantile(0.999)), "lat_max_us": us(res.Latency.Max()),
					"errors": res.Errors,
				})
			}
			fmt.Fprintf(w, "%s %s: bs=%d qd=%d jobs=%d runtime=%.1fs\n", cfg.Pattern, cfg.RW, cfg.BlockSize,
				res.QueueDepth, cfg.Jobs, res.Elapsed.Seconds())
			fmt.Fprintf(w, "  IOPS     : %.0f (reads %d, writes %d)\n", res.IOPS(), res.Reads, res.Writes)
			fmt.Fprintf(w, "  bandwidth: %.1f MB/s\n", res.MBps())
			l := bench.FormatLatency
			fmt.Fprintf(w, "  latency  : mean %s  p50 %s  p99 %s  p99.9 %s  max %s\n", l(res.Latency.Mean()),
				l(res.Latency.Quantile(0.5)), l(res.Latency.Quantile(0.99)), l(res.Latency.Quantile(0.999)), l(res.Latency.Max()))
			if res.Errors > 0 {
				return fmt.Errorf("%d I/O errors, first: %v", res.Errors, res.FirstError)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Pattern, "pattern", "rand", "rand or seq")
	f.StringVar(&cfg.RW, "rw", "read", "read, write or mixed")
	f.IntVar(&cfg.ReadPercent, "rwmix", 70, "percent reads for --rw mixed (0 to 100)")
	f.StringVar(&bs, "bs", "4k", "I/O size (K/M suffixes)")
	f.IntVar(&cfg.QueueDepth, "qd", 32, "I/Os outstanding per job (at most the negotiated queue depth; the result says what ran)")
	f.IntVar(&cfg.Jobs, "jobs", 1, "jobs (one I/O queue each)")
	f.DurationVar(&cfg.Duration, "runtime", 10*time.Second, "duration (positive; Ctrl-C ends the run early and still reports)")
	f.StringVar(&offset, "offset", "0", "start of the region (bytes)")
	f.StringVar(&size, "size", "0", "size of the region (bytes, 0: to the end)")
	f.Uint32Var(&nsid, "nsid", 0, "namespace ID (default: the first)")
	f.BoolVarP(&quiet, "quiet", "q", false, "no live progress line (it is shown only when stderr is a terminal)")
	return cmd
}

// checkBenchFlags refuses values the run cannot honour, naming the flag.
func checkBenchFlags(cfg bench.Config) error {
	switch {
	case cfg.ReadPercent < 0 || cfg.ReadPercent > 100:
		return fmt.Errorf("--rwmix %d: want a percentage of reads from 0 to 100", cfg.ReadPercent)
	case cfg.Duration <= 0:
		return fmt.Errorf("--runtime %v: want a positive duration (Ctrl-C ends a run early)", cfg.Duration)
	case cfg.QueueDepth <= 0:
		return fmt.Errorf("--qd %d: want at least 1", cfg.QueueDepth)
	case cfg.Jobs <= 0:
		return fmt.Errorf("--jobs %d: want at least 1", cfg.Jobs)
	case cfg.Pattern != "rand" && cfg.Pattern != "seq":
		return fmt.Errorf("--pattern %q: want rand or seq", cfg.Pattern)
	case cfg.RW != "read" && cfg.RW != "write" && cfg.RW != "mixed":
		return fmt.Errorf("--rw %q: want read, write or mixed", cfg.RW)
	}
	return nil
}

// isTerminal reports whether w is a terminal (live progress lines with
// carriage returns only make sense there, not in a log or a pipe).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
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
