package daemon

import (
	"log/slog"
	"syscall"
)

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit: every
// connected queue, volume and io_uring costs file descriptors, and the
// common soft default of 1024 runs out long before the machine does. The
// Go runtime (since Go 1.19) already raises it when package os starts;
// this makes the daemon's limit explicit, covers runtimes that did not, and
// puts both limits in the log, where an admin looks when "too many open
// files" appears (`prlimit --nofile=N:N` sets the hard limit). It
// logs the limits it found and set (a failure is logged as a warning;
// the daemon runs on with the old limit). Called once at start-up from
// the main goroutine.
func RaiseFileLimit(log *slog.Logger) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		log.Warn("file descriptor limit: getrlimit", "err", err)
		return
	}
	if rl.Cur >= rl.Max {
		log.Info("file descriptor limit", "soft", rl.Cur, "hard", rl.Max)
		return
	}
	old := rl.Cur
	rl.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		log.Warn("file descriptor limit: cannot raise the soft limit to the hard limit", "soft", old, "hard", rl.Max, "err", err)
		return
	}
	log.Info("file descriptor limit raised", "soft", rl.Cur, "was", old, "hard", rl.Max)
}
