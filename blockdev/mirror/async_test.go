package mirror_test

import (
	"bytes"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
)

// inlineLeg completes its async writes inside SubmitWrite, so the
// mirror's last leg completion happens before its own SubmitWrite
// returns: the mirror must still not call the caller's IODone there.
type inlineLeg struct{ *mem.Backend }

func (l inlineLeg) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	done.IODone(l.ReadAt([][]byte{buf}, lba))
	return true
}

func (l inlineLeg) SubmitWrite(buf []byte, lba uint64, fl blockdev.WriteFlags, done blockdev.Completion) bool {
	done.IODone(l.WriteAt([][]byte{buf}, lba, fl))
	return true
}

// goid returns the calling goroutine's id (tests only).
func goid() string {
	var b [64]byte
	n := runtime.Stack(b[:], false)
	return string(bytes.Fields(b[:n])[1])
}

// onceDone counts IODone calls and notes one made on the submitter's
// goroutine.
type onceDone struct {
	submitter string
	calls     atomic.Int32
	inline    atomic.Bool
	res       chan error
}

func (d *onceDone) IODone(err error) {
	if goid() == d.submitter {
		d.inline.Store(true)
	}
	d.calls.Add(1)
	d.res <- err
}

// TestIODoneOnceNeverInsideSubmit: IODone is called exactly once per
// accepted SubmitWrite and never on the submitter's goroutine, also when
// every leg completes before SubmitWrite returns, and when a leg fails.
func TestIODoneOnceNeverInsideSubmit(t *testing.T) {
	const bs = 512
	mb := &okMembership{}
	bad := faulty.New(mem.New(64, bs))
	m := newMirror(t, mb, mirrorConfigSmall(), inlineLeg{mem.New(64, bs)}, inlineLeg{mem.New(64, bs)}, bad)
	defer m.Close()
	bad.Inject(faulty.Rule{Ops: faulty.OpWrite, Every: 5, Times: 1})
	for i := range 20 {
		d := &onceDone{submitter: goid(), res: make(chan error, 2)}
		if !m.SubmitWrite(pat(bs, bs, uint64(i), 1), uint64(i), 0, d) {
			t.Fatalf("write %d refused", i)
		}
		if err := <-d.res; err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		if n := d.calls.Load(); n != 1 || d.inline.Load() {
			t.Fatalf("write %d: IODone called %d times, on the submitter's goroutine: %v", i, n, d.inline.Load())
		}
	}
	if got := mb.list(); len(got) != 1 {
		t.Fatalf("faults recorded: %v", got)
	}
}

// TestCloseWaitsForFaultRecord: Close waits for an operation that waits
// for a fault record, which then completes; later calls fail with
// ErrClosed.
func TestCloseWaitsForFaultRecord(t *testing.T) {
	const bs = 512
	g := newGate(nil)
	bad := faulty.New(mem.New(64, bs))
	m := newMirror(t, g, mirrorConfigSmall(), mem.New(64, bs), bad)
	bad.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
	wr := make(chan error, 1)
	go func() { wr <- m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0) }()
	<-g.called
	cl := make(chan error, 1)
	go func() { cl <- m.Close() }()
	notDone(t, cl, "Close")
	g.results <- nil
	if err := <-wr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := <-cl; err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0); !errors.Is(err, blockdev.ErrClosed) {
		t.Fatalf("write after Close: %v", err)
	}
	if err := bad.Inner().WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0); !errors.Is(err, blockdev.ErrClosed) {
		t.Fatalf("the leg after Close: %v (want closed by the mirror)", err)
	}
}
