package mirror_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// gateMembership's Fault announces each call on called and returns the
// next value sent on results (it blocks until the test sends one).
type gateMembership struct {
	called  chan string
	results chan error
	log     *eventLog
}

func newGate(log *eventLog) *gateMembership {
	return &gateMembership{called: make(chan string, 16), results: make(chan error), log: log}
}

func (g *gateMembership) Fault(leg string, _ error) error {
	g.called <- leg
	err := <-g.results
	if g.log != nil && err == nil {
		g.log.add("fault recorded " + leg)
	}
	return err
}

// eventLog is an ordered record of what happened.
type eventLog struct {
	mu  sync.Mutex
	evs []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.evs)
}

// notDone gives an operation that wrongly does not wait (for a fault
// record, a region copy) time to show itself; a correct mirror passes
// whatever the scheduling (the operation cannot complete yet), so this is
// no synchronisation.
func notDone(t *testing.T, res <-chan error, what string) {
	t.Helper()
	for range 2000 {
		select {
		case err := <-res:
			t.Fatalf("%s completed (err %v) before what it must wait for", what, err)
		default:
			runtime.Gosched()
		}
	}
}

func pat(n, bs int, lba, gen uint64) []byte {
	p := blockdevtest.AlignedBuffer(n)
	for i := range p {
		x := (lba+uint64(i/bs))*0x9E3779B97F4A7C15 ^ gen*0xBF58476D1CE4E5B9 ^ uint64(i%bs)*0x94D049BB133111EB
		p[i] = byte(x ^ x>>29 ^ x>>41)
	}
	return p
}

// TestFaultRecordedBeforeWriteCompletes: a remote leg fails a write; the
// write completes only after Membership.Fault has returned, and succeeds
// (the leg is recorded out of sync). A second write that starts while the
// fault is being recorded, on another region, waits too.
func TestFaultRecordedBeforeWriteCompletes(t *testing.T) {
	const bs = 512
	log := &eventLog{}
	g := newGate(log)
	local, remote := mem.New(4096, bs), faulty.New(mem.New(4096, bs))
	m := newMirror(t, g, mirrorConfigSmall(), local, remote)
	defer m.Close()
	remote.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})

	res1 := make(chan error, 1)
	go func() {
		err := m.WriteAt([][]byte{pat(bs, bs, 3, 1)}, 3, 0)
		log.add("write 1 acknowledged")
		res1 <- err
	}()
	if leg := <-g.called; leg != legName(1) {
		t.Fatalf("Fault(%q), want %q", leg, legName(1))
	}
	notDone(t, res1, "the failed write")
	res2 := make(chan error, 1)
	go func() { res2 <- m.WriteAt([][]byte{pat(bs, bs, 2000, 2)}, 2000, blockdev.WriteFUA) }()
	notDone(t, res2, "a write started during the fault record")
	if st := m.Legs()[1]; st.State != mirror.Faulted || !st.FaultPending {
		t.Fatalf("leg during the record: %+v", st)
	}
	g.results <- nil
	if err := <-res1; err != nil {
		t.Fatalf("write 1: %v", err)
	}
	if err := <-res2; err != nil {
		t.Fatalf("write 2: %v", err)
	}
	if got := log.String(); got != "[fault recorded "+legName(1)+" write 1 acknowledged]" {
		t.Fatalf("order of events: %s", got)
	}
	st := m.Legs()[1]
	if st.State != mirror.Faulted || st.FaultPending {
		t.Fatalf("leg after the record: %+v", st)
	}
	// Both regions are dirty (16 KiB regions: blocks 3 and 2000 are in
	// different ones), nothing else.
	if st.DirtyBytes != 2*16<<10 {
		t.Fatalf("dirty bytes %d, want %d", st.DirtyBytes, 2*16<<10)
	}
	// A faulted leg gets no more I/O and costs writes nothing.
	if err := m.WriteAt([][]byte{pat(bs, bs, 5, 3)}, 5, 0); err != nil {
		t.Fatal(err)
	}
	select {
	case leg := <-g.called:
		t.Fatalf("Fault(%q) called again for a recorded fault", leg)
	default:
	}
}

// TestFencedWriteFails: when the fault cannot be recorded the write fails
// with ErrFenced, and so do later writes (each tries to record it again)
// until a record succeeds.
func TestFencedWriteFails(t *testing.T) {
	const bs = 4096
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			g := newGate(nil)
			legs := memLegs(3, 64, bs, async)
			bad := faulty.New(legs[2])
			legs[2] = bad
			m := newMirror(t, g, mirrorConfigSmall(), legs...)
			defer m.Close()
			bad.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
			b := m.Backend()
			write := func(lba uint64) <-chan error {
				res := make(chan error, 1)
				buf := pat(bs, bs, lba, 9)
				if a, ok := b.(blockdev.Async); ok && async && a.SubmitWrite(buf, lba, 0, doneChan(res)) {
					return res
				}
				go func() { res <- b.WriteAt([][]byte{buf}, lba, 0) }()
				return res
			}
			res := write(1)
			<-g.called
			g.results <- errors.New("no quorum")
			<-g.called // the retry
			g.results <- errors.New("no quorum")
			if err := <-res; !errors.Is(err, mirror.ErrFenced) {
				t.Fatalf("write with an unrecorded fault: %v, want ErrFenced", err)
			}
			if st := m.Legs()[2]; !st.FaultPending {
				t.Fatalf("leg after a failed record: %+v", st)
			}
			// A later write, to another region, does not go to the leg but
			// needs the record too.
			res = write(40)
			<-g.called
			g.results <- errors.New("no quorum")
			if err := <-res; !errors.Is(err, mirror.ErrFenced) {
				t.Fatalf("later write: %v, want ErrFenced", err)
			}
			// Once a record succeeds (here for a Flush, which waits for
			// it like a write), writes succeed again without the leg.
			fl := make(chan error, 1)
			go func() { fl <- m.Flush() }()
			<-g.called
			g.results <- nil
			if err := <-fl; err != nil {
				t.Fatalf("Flush after the record: %v", err)
			}
			if err := <-write(1); err != nil {
				t.Fatalf("write after the record: %v", err)
			}
			if st := m.Legs()[2]; st.State != mirror.Faulted || st.FaultPending {
				t.Fatalf("leg after the record: %+v", st)
			}
		})
	}
}

type doneChan chan error

func (d doneChan) IODone(err error) { d <- err }
