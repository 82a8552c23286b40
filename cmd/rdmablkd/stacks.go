package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"
)

// dumpStacksOn writes every goroutine's stack to a file in dir each time
// the process gets SIGUSR1 (kill -USR1 PID), and logs the file's name: the
// way to see where a daemon that seems stuck is waiting, without stopping
// it (SIGQUIT also prints the stacks, but ends the process). For the life
// of the process — a shutdown that does not finish draining is one of the
// things to look at this way. One goroutine, blocked on the signal.
func dumpStacksOn(dir string, log *slog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
			if path, err := dumpStacks(dir); err != nil {
				log.Error("goroutine stacks (SIGUSR1)", "err", err)
			} else {
				log.Info("goroutine stacks written (SIGUSR1)", "file", path)
			}
		}
	}()
}

// dumpStacks writes the stacks to dir/rdmablkd-PID-stacks-TIME.txt.
func dumpStacks(dir string) (string, error) {
	path := filepath.Join(dir, fmt.Sprintf("rdmablkd-%d-stacks-%s.txt", os.Getpid(), time.Now().UTC().Format("20060102T150405.000")))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	werr := pprof.Lookup("goroutine").WriteTo(f, 2)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return "", fmt.Errorf("%s: %w", path, werr)
	}
	return path, nil
}
