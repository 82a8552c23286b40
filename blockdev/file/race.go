//go:build race

package file

import (
	"runtime"
	"unsafe"
)

// The kernel reads and writes callers' buffers behind the race detector's
// back; tell it, so that a caller reusing a buffer while an I/O on it is in
// progress is reported.

func raceReadBufs(bufs [][]byte) {
	for _, p := range bufs {
		if len(p) > 0 {
			runtime.RaceReadRange(unsafe.Pointer(unsafe.SliceData(p)), len(p))
		}
	}
}

func raceWriteBufs(bufs [][]byte) {
	for _, p := range bufs {
		if len(p) > 0 {
			runtime.RaceWriteRange(unsafe.Pointer(unsafe.SliceData(p)), len(p))
		}
	}
}
