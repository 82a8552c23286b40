// Package cpuprof is the --cpuprofile, --memprofile and --trace flags of
// rdmablkd and of rdmablk's attachment processes: a Go CPU profile of the
// process's run, for the lab to see where the target or the initiator
// spends its time under fio (`go tool pprof BINARY cpu.pprof`), the
// allocations of the run (mem.go), and a Go execution trace
// (`go tool trace`). Stateless apart from the profile and trace the
// runtime keeps; the caller's goroutine starts and stops them.
package cpuprof

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// Start starts a CPU profile written to path (nothing when path is
// empty) and returns the function that stops it and closes the file; the
// caller runs it once, when the process's work has stopped.
func Start(path string) (stop func(), err error) {
	return toFile("--cpuprofile", path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// toFile runs a runtime recorder (start, stop) into a file created at
// path, for the flag named flag: nothing when path is empty; errors name
// the flag. The returned stop ends the recording and closes the file.
func toFile(flag, path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() {
		end()
		f.Close()
	}, nil
}
