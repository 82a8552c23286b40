package cpuprof

import "runtime/trace"

// Trace starts a Go execution trace written to path (nothing when path is
// empty) and returns the function that stops it and closes the file: the
// --trace flag, for `go tool trace` (which goroutine blocks where, and how
// often the scheduler hands a locked thread's P around). A trace costs the
// traced process far more than a CPU profile; take it for a short run.
func Trace(path string) (stop func(), err error) {
	return toFile("--trace", path, trace.Start, trace.Stop)
}
