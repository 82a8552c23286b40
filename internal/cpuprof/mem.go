package cpuprof

import (
	"errors"
	"io"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
)

// memActive makes a second --memprofile recording fail as a second CPU
// profile does: the runtime has one allocation record per process.
var memActive atomic.Bool

// errMemActive is a second recording's error.
var errMemActive = errors.New("an allocation profile is already being recorded")

// Mem records allocations from now on and returns the function that
// writes them to path as a pprof "allocs" profile and closes the file
// (nothing when path is empty): the --memprofile flag, for `go tool pprof
// -sample_index=alloc_space BINARY mem.pprof` — which code allocates
// while the daemon serves I/O, whose garbage the collector then scans.
// The runtime samples one allocation per 512 KiB allocated on average;
// a process that allocates nothing per I/O shows only its start-up.
func Mem(path string) (stop func(), err error) {
	var out io.Writer
	return toFile("--memprofile", path, func(w io.Writer) error {
		if !memActive.CompareAndSwap(false, true) {
			return errMemActive
		}
		out = w
		return nil
	}, func() {
		// The allocations the runtime recorded up to the last completed
		// collection: one forced, so that the latest ones count.
		runtime.GC()
		_ = pprof.Lookup("allocs").WriteTo(out, 0)
		memActive.Store(false)
	})
}
