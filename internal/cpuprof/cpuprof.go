// Package cpuprof is the --cpuprofile and --trace flags of rdmablkd and
// of rdmablk's attachment processes: a Go CPU profile of the process's
// run, for the lab to see where the target or the initiator spends its
// time under fio (`go tool pprof BINARY cpu.pprof`), and a Go execution
// trace (`go tool trace`). Stateless apart from the profile and trace the
// runtime keeps; the caller's goroutine starts and stops them.
package cpuprof

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// Start starts a CPU profile written to path (nothing when path is
// empty) and returns the function that stops it and closes the file; the
// caller runs it once, when the process's work has stopped.
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
