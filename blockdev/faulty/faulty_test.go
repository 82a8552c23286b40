package faulty_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/null"
)

func TestContractNoFaults(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		return faulty.New(mem.New(blocks, bs))
	}, blockdevtest.Caps{Persistent: true})
}

// TestContractHarmlessRules: rules that never act (a range past the end,
// or Times used up) leave behaviour unchanged.
func TestContractHarmlessRules(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		f := faulty.New(mem.New(blocks, bs))
		f.Inject(faulty.Rule{Ops: faulty.OpRead | faulty.OpWrite, LBA: blocks + 10, Blocks: 5})
		f.Inject(faulty.Rule{Ops: faulty.OpFlush, Every: 1 << 40})
		return f
	}, blockdevtest.Caps{Persistent: true})
}

var errBoom = errors.New("boom")

func vec(n int) [][]byte { return [][]byte{make([]byte, n*512)} }

func TestRangeRule(t *testing.T) {
	f := faulty.New(mem.New(100, 512))
	id := f.Inject(faulty.Rule{Ops: faulty.OpRead | faulty.OpWrite, LBA: 10, Blocks: 5, Err: errBoom})
	cases := []struct {
		lba  uint64
		n    int
		fail bool
	}{
		{0, 10, false}, // ends just before
		{0, 11, true},  // last block overlaps
		{10, 1, true},  // first block
		{14, 1, true},  // last block
		{15, 3, false}, // starts just after
		{5, 20, true},  // covers it
		{12, 1, true},  // inside
		{99, 1, false}, // far away
	}
	fired := uint64(0)
	for _, c := range cases {
		for _, write := range []bool{false, true} {
			var err error
			if write {
				err = f.WriteAt(vec(c.n), c.lba, 0)
			} else {
				err = f.ReadAt(vec(c.n), c.lba)
			}
			if c.fail != errors.Is(err, errBoom) || !c.fail && err != nil {
				t.Errorf("lba %d n %d write %v: %v, want fail=%v", c.lba, c.n, write, err, c.fail)
			}
			if c.fail {
				fired++
			}
		}
	}
	if got := f.Fired(id); got != fired {
		t.Errorf("Fired = %d, want %d", got, fired)
	}
	// Other operations are not affected.
	if err := f.WriteZeroes(10, 5); err != nil {
		t.Errorf("WriteZeroes: %v", err)
	}
	if err := f.Flush(); err != nil {
		t.Errorf("Flush: %v", err)
	}
}

func TestOverlapNoOverflow(t *testing.T) {
	f := faulty.New(null.New(1<<62, 512))
	f.Inject(faulty.Rule{Ops: faulty.OpWriteZeroes | faulty.OpDiscard, LBA: 1<<62 - 1, Blocks: 1})
	if err := f.WriteZeroes(1<<62-1, 1); !errors.Is(err, blockdev.ErrMedium) {
		t.Errorf("last block: %v, want the default ErrMedium", err)
	}
	if err := f.Discard(0, 1<<62-1); err != nil {
		t.Errorf("range ending just before the rule: %v", err)
	}
	// Requests the device rejects get the device's error, not the fault.
	if err := f.Discard(1, ^uint64(0)); !errors.Is(err, blockdev.ErrOutOfRange) {
		t.Errorf("wrapping range: %v", err)
	}
	if err := f.WriteZeroes(1<<62-1, 2); !errors.Is(err, blockdev.ErrOutOfRange) {
		t.Errorf("range past the end: %v", err)
	}
	f.Inject(faulty.Rule{Ops: faulty.OpWrite})
	if err := f.WriteAt([][]byte{make([]byte, 100)}, 0, 0); !errors.Is(err, blockdev.ErrUnaligned) {
		t.Errorf("partial block: %v", err)
	}
}

func TestEveryAndTimes(t *testing.T) {
	f := faulty.New(null.New(100, 512))
	id := f.Inject(faulty.Rule{Ops: faulty.OpFlush, Every: 3, Times: 2, Err: errBoom})
	var pattern []bool
	for range 12 {
		pattern = append(pattern, f.Flush() != nil)
	}
	want := []bool{false, false, true, false, false, true, false, false, false, false, false, false}
	for i := range want {
		if pattern[i] != want[i] {
			t.Fatalf("flush failures %v, want %v", pattern, want)
		}
	}
	if f.Fired(id) != 2 {
		t.Fatalf("Fired = %d", f.Fired(id))
	}
}

func TestAfter(t *testing.T) {
	m := mem.New(16, 512)
	f := faulty.New(m)
	f.Inject(faulty.Rule{Ops: faulty.OpWrite, After: true, Times: 1})
	p := bytes.Repeat([]byte{7}, 512)
	if err := f.WriteAt([][]byte{p}, 3, 0); !errors.Is(err, blockdev.ErrMedium) {
		t.Fatalf("WriteAt: %v, want ErrMedium", err)
	}
	got := make([]byte, 512)
	if err := f.ReadAt([][]byte{got}, 3); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("the write should have landed: %v", err)
	}
	// An inner error wins over the injected one.
	f.Inject(faulty.Rule{Ops: faulty.OpWrite, After: true, Err: errBoom})
	if err := f.WriteAt([][]byte{p}, 16, 0); !errors.Is(err, blockdev.ErrOutOfRange) {
		t.Fatalf("inner error: %v", err)
	}
}

func TestBeforeLeavesDataAlone(t *testing.T) {
	m := mem.New(16, 512)
	f := faulty.New(m)
	id := f.Inject(faulty.Rule{Ops: faulty.OpWrite | faulty.OpWriteZeroes | faulty.OpDiscard})
	p := bytes.Repeat([]byte{9}, 512)
	if err := f.WriteAt([][]byte{p}, 1, 0); err == nil {
		t.Fatal("write did not fail")
	}
	if m.ChunksAllocated() != 0 {
		t.Fatal("failed write reached the inner backend")
	}
	f.Remove(id)
	if err := f.WriteAt([][]byte{p}, 1, 0); err != nil {
		t.Fatalf("after Remove: %v", err)
	}
	f.Inject(faulty.Rule{Ops: faulty.OpWriteZeroes})
	if err := f.WriteZeroes(0, 16); err == nil {
		t.Fatal("WriteZeroes did not fail")
	}
	got := make([]byte, 512)
	if err := f.ReadAt([][]byte{got}, 1); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("failed WriteZeroes changed data: %v", err)
	}
	f.Clear()
	if err := f.WriteZeroes(0, 16); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
}

func TestHoldStallsUntilReleased(t *testing.T) {
	f := faulty.New(mem.New(16, 512))
	if !f.NonBlocking() {
		t.Fatal("faulty(mem) without stalling rules should be NonBlocking")
	}
	hold := make(chan struct{})
	notify := make(chan faulty.Op, 1)
	id := f.Inject(faulty.Rule{Ops: faulty.OpRead, Hold: hold, Notify: notify, Times: 1})
	if f.NonBlocking() {
		t.Fatal("NonBlocking with a stalling rule installed")
	}
	done := make(chan error)
	go func() {
		done <- f.ReadAt(vec(1), 0)
	}()
	if op := <-notify; op != faulty.OpRead {
		t.Fatalf("notified %v", op)
	}
	// The read is now held; other calls still proceed.
	if err := f.WriteAt(vec(1), 1, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("held read returned early: %v", err)
	default:
	}
	close(hold)
	if err := <-done; err != nil {
		t.Fatalf("released read: %v, want success (pure stall)", err)
	}
	f.Remove(id)
	if !f.NonBlocking() {
		t.Fatal("NonBlocking after removing the stalling rule")
	}
	// A stall with an error.
	hold2 := make(chan struct{}, 1)
	hold2 <- struct{}{}
	f.Inject(faulty.Rule{Ops: faulty.OpDiscard, Hold: hold2, Err: errBoom})
	if err := f.Discard(0, 1); !errors.Is(err, errBoom) {
		t.Fatalf("held discard: %v", err)
	}
}

type blocking struct{ blockdev.Backend }

func TestNonBlockingFollowsInner(t *testing.T) {
	if faulty.New(blocking{mem.New(1, 512)}).NonBlocking() {
		t.Fatal("wrapper of a blocking backend claims NonBlocking")
	}
}

func TestOpString(t *testing.T) {
	for o, want := range map[faulty.Op]string{
		0:                                "none",
		faulty.OpRead:                    "read",
		faulty.OpRead | faulty.OpDiscard: "read|discard",
		faulty.OpAll:                     "read|write|flush|write-zeroes|discard",
		faulty.OpWrite | faulty.Op(0x80): "write|0x80",
	} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", uint8(o), got, want)
		}
	}
}

func TestNoAllocationsWithoutFaults(t *testing.T) {
	f := faulty.New(null.New(1<<20, 4096))
	f.Inject(faulty.Rule{LBA: 1 << 19, Blocks: 1})
	v := [][]byte{make([]byte, 4096)}
	allocs := testing.AllocsPerRun(100, func() {
		_ = f.ReadAt(v, 5)
		_ = f.WriteAt(v, 5, blockdev.WriteFUA)
		_ = f.WriteZeroes(5, 1)
		_ = f.Flush()
		_ = f.ReadAt(v, 1<<19) // acting: returns the sentinel
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}
