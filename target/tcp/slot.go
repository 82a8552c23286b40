package tcp

import (
	"sync"
	"unsafe"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// slotState says which goroutine owns a slot.
type slotState uint8

const (
	slotFree slotState = iota // on the free list
	slotH2C                   // reader: R2T sent, receiving H2CData
	slotCore                  // the core executes it, then the send path writes its response
)

// slot is one preallocated request: the core's Request, its data buffer
// and the progress of a host write. The reader owns it from the free
// list until it hands it to the core or posts its response; the send
// path returns it to the free list once the response is written (the
// hand-offs go through mutexes: happens-before edges).
type slot struct {
	req   target.Request
	idx   uint16
	state slotState
	// buf is the slot's data buffer: 4 KiB aligned, grown on demand up
	// to MaxDataTransfer, kept for the slot's next commands.
	buf []byte
	// Host write (R2T) progress: want bytes in all, got received so far.
	want, got uint32
	// digestErr: a data digest mismatch was seen in this command's data.
	digestErr bool
}

// reset prepares the slot for a new command.
func (s *slot) reset() {
	s.req.Dir, s.req.Length, s.req.Data = nvme.DirNone, 0, nil
	s.want, s.got, s.digestErr = 0, 0, false
}

// ensure returns the slot's buffer with room for n bytes (n ≤ limit),
// growing it to the next power of two (at least 4 KiB, at most limit
// rounded up to 4 KiB). The buffer starts on a 4 KiB boundary, so a
// backend may use it for O_DIRECT I/O.
func (s *slot) ensure(n, limit int) []byte {
	if cap(s.buf) >= n {
		return s.buf[:cap(s.buf)]
	}
	size := 4096
	for size < n {
		size <<= 1
	}
	size = min(size, (limit+4095)&^4095)
	size = max(size, n)
	s.buf = alignedBuf(size)
	return s.buf
}

// alignedBuf allocates n bytes starting on a 4 KiB boundary. The Go heap
// does not move objects, so the alignment holds for the buffer's life.
// Power-of-two sizes from 4 KiB up are aligned as allocated (their size
// classes, and large objects, start on page boundaries); other sizes are
// padded.
func alignedBuf(n int) []byte {
	if b := make([]byte, n); uintptr(unsafe.Pointer(unsafe.SliceData(b)))&4095 == 0 {
		return b
	}
	b := make([]byte, n+4095)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & 4095)
	return b[off : off+n : off+n]
}

// commandDirection is the data direction of the command: opcode bits 1:0,
// or FCTYPE bits 1:0 for fabrics commands (NVMe-oF spec §3.3).
func commandDirection(s *nvme.SQE) nvme.DataDirection {
	if s.IsFabrics() {
		return nvme.OpcodeDirection(s.FCType())
	}
	return nvme.OpcodeDirection(s.Opcode())
}

// freeList is the stack of free slot indices: the reader pops, the
// goroutine that wrote a response pushes. A stack (not a FIFO) keeps reusing the same few slots at low
// queue depth, so their buffers stay warm and few are ever allocated.
type freeList struct {
	mu sync.Mutex
	s  []uint16
}

func (f *freeList) push(i uint16) {
	f.mu.Lock()
	f.s = append(f.s, i) // capacity: every slot
	f.mu.Unlock()
}

func (f *freeList) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.s)
}

func (f *freeList) pop() (uint16, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.s) == 0 {
		return 0, false
	}
	i := f.s[len(f.s)-1]
	f.s = f.s[:len(f.s)-1]
	return i, true
}
