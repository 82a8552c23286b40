package replica

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/internal/syncbuf"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// hangDeadline is how long a test waits before calling an I/O hung: far
// above IOTimeout plus a controller shutdown (5 s), so a loaded host
// does not fail it, and far below "never".
const hangDeadline = 60 * time.Second

// TestIOTimeout: a replica whose backend stops answering (its writes
// block, while its controller stays connected and answers keep-alives)
// fails a blocking write and an async write with ErrTimeout (wrapping
// blockdev.ErrMedium) while the replica still holds them; the leg is down
// from then on (later I/O fails at once with ErrDown) and Close returns
// without the replica ever answering.
func TestIOTimeout(t *testing.T) {
	fabric := soft.NewFabric()
	g := newGated(mem.New(256, 4096))
	n := newReplicaRelease(t, fabric, g, g.release)
	cfg := legConfig(fabric, n)
	cfg.IOTimeout = 200 * time.Millisecond
	var logged syncbuf.Buffer
	cfg.Options.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	l := openLeg(t, cfg)

	blocking := make(chan error, 1)
	go func() { blocking <- l.WriteAt([][]byte{fill(4096, 1)}, 1, 0) }()
	within(t, g.held, hangDeadline, "write reaching the replica backend")
	async := make(chanDone, 1)
	if !l.SubmitWrite(fill(8192, 2), 8, blockdev.WriteFUA, async) {
		t.Fatal("leg refused an async write before the timeout")
	}
	for _, c := range []struct {
		name string
		ch   <-chan error
	}{{"blocking", blocking}, {"async", async}} {
		err := within(t, c.ch, hangDeadline, c.name+" write to a stuck replica")
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, blockdev.ErrMedium) {
			t.Fatalf("%s write: %v, want ErrTimeout wrapping ErrMedium", c.name, err)
		}
	}
	select {
	case <-g.open:
		t.Fatal("the replica was released before the writes failed")
	default:
	}
	if !errors.Is(l.Err(), ErrDown) {
		t.Fatalf("Err() = %v after a timeout, want ErrDown", l.Err())
	}
	// The log says what was stuck: both writes, the oldest a write.
	if s := logged.String(); !strings.Contains(s, `msg="replica I/O timed out; leg down"`) ||
		!strings.Contains(s, "in_flight=2") || !strings.Contains(s, "oldest_op=write") {
		t.Fatalf("the timeout's log line does not name what was in flight:\n%s", s)
	}
	if err := l.WriteAt([][]byte{fill(4096, 3)}, 2, 0); !errors.Is(err, ErrDown) {
		t.Fatalf("write on a down leg: %v, want ErrDown", err)
	}
	if l.SubmitWrite(fill(4096, 3), 2, 0, async) {
		t.Fatal("a down leg took an async write")
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	if err := within(t, closed, hangDeadline, "Close of a leg to a stuck replica"); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestIOTimeoutThroughMirror: the mirror's write to a stuck replica
// faults the leg within the timeout; the fault recorded, the write
// completes and is on the local leg.
func TestIOTimeoutThroughMirror(t *testing.T) {
	g := newGated(mem.New(mBlocks, mBS))
	r := newMirrorRig(t, mem.New(mBlocks, mBS), g, func(c *LegConfig) { c.IOTimeout = 200 * time.Millisecond })
	p := fill(16<<10, 4)
	ch := make(chan error, 1)
	go func() { ch <- r.b.WriteAt([][]byte{p}, 64, 0) }()
	if err := within(t, ch, hangDeadline, "mirror write to a stuck replica"); err != nil {
		t.Fatalf("mirror write: %v", err)
	}
	if got := within(t, r.mem.called, hangDeadline, "Membership.Fault"); got != legName {
		t.Fatalf("Fault(%q)", got)
	}
	r.mem.mu.Lock()
	cause := r.mem.causes[0]
	r.mem.mu.Unlock()
	if !errors.Is(cause, ErrTimeout) {
		t.Fatalf("fault cause %v, want ErrTimeout", cause)
	}
	if st := r.legState(t); st.State != mirror.Faulted {
		t.Fatalf("leg %v, want faulted", st.State)
	}
	if got := readBack(t, r.local, 64, len(p)); !bytes.Equal(got, p) {
		t.Fatal("acknowledged write missing on the local leg")
	}
}

// onceDone is a Completion that counts its calls and records the first
// error; a second call is a test failure.
type onceDone struct {
	t     *testing.T
	calls atomic.Int32
	err   error
	all   *sync.WaitGroup
}

func (d *onceDone) IODone(err error) {
	if d.calls.Add(1) != 1 {
		d.t.Errorf("IODone called twice (second with %v)", err)
		return
	}
	d.err = err
	d.all.Done()
}

// TestIOTimeoutManyInFlight: with every slot's write stuck at the replica
// and blocking reads stuck too, a timeout completes each accepted async
// write exactly once with ErrTimeout, fails the blocking reads (after the
// session is torn down: their buffers may be filled until then), refuses
// submissions beyond Depth, and Close and UnregisterFixed return.
func TestIOTimeoutManyInFlight(t *testing.T) {
	fabric := soft.NewFabric()
	g := newGated(mem.New(1024, 4096))
	g.reads = true
	n := newReplicaRelease(t, fabric, g, g.release)
	cfg := legConfig(fabric, n)
	cfg.IOTimeout = 300 * time.Millisecond
	cfg.Depth = 16
	l := openLeg(t, cfg)
	region := make([]byte, 64<<10)
	reg, err := l.RegisterFixed(region)
	if err != nil {
		t.Fatal(err)
	}
	reads := make(chan error, 2)
	for i := range 2 {
		go func() { reads <- l.ReadAt([][]byte{make([]byte, 4096)}, uint64(100+i)) }()
	}
	for range 2 {
		within(t, g.held, hangDeadline, "reads reaching the replica backend")
	}
	var all sync.WaitGroup
	var ds []*onceDone
	for i := 0; ; i++ {
		d := &onceDone{t: t, all: &all}
		all.Add(1)
		if !l.SubmitWriteFixed(region[(i%16)*4096:(i%16+1)*4096], uint64(i), 0, reg, d) {
			all.Done()
			break
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 || len(ds) > cfg.Depth {
		t.Fatalf("%d async writes accepted with Depth %d", len(ds), cfg.Depth)
	}
	wait := make(chan struct{})
	go func() { all.Wait(); close(wait) }()
	within(t, wait, hangDeadline, "async writes to a stuck replica")
	for i, d := range ds {
		if !errors.Is(d.err, ErrTimeout) {
			t.Fatalf("write %d: %v, want ErrTimeout", i, d.err)
		}
	}
	for range 2 {
		if err := within(t, reads, hangDeadline, "read from a stuck replica"); !errors.Is(err, ErrTimeout) {
			t.Fatalf("read: %v, want ErrTimeout", err)
		}
	}
	unreg := make(chan struct{})
	go func() { l.UnregisterFixed(reg); close(unreg) }()
	within(t, unreg, hangDeadline, "UnregisterFixed after a timeout")
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	if err := within(t, closed, hangDeadline, "Close after a timeout"); err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		if c := d.calls.Load(); c != 1 {
			t.Fatalf("write %d: IODone called %d times", i, c)
		}
	}
}
