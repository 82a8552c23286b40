package cpuprof

import (
	"fmt"
	"os"
	"runtime/trace"
)

// Trace starts a Go execution trace written to path (nothing when path is
// empty) and returns the function that stops it and closes the file: the
// --trace flag, for `go tool trace` (which goroutine blocks where, and how
// often the scheduler hands a locked thread's P around). A trace costs the
// traced process far more than a CPU profile; take it for a short run.
func Trace(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}
