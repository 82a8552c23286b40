package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// gatedBackend holds every ReadAt until the gate opens and counts how
// many are held at once. It does not forward blockdev.NonBlocking, so the
// target runs its commands on worker goroutines.
type gatedBackend struct {
	blockdev.Backend
	mu   sync.Mutex
	cond *sync.Cond
	open bool
	cur  int // ReadAt calls inside now
	max  int // most at once
}

func newGated(be blockdev.Backend) *gatedBackend {
	g := &gatedBackend{Backend: be}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedBackend) ReadAt(bufs [][]byte, lba uint64) error {
	g.mu.Lock()
	g.cur++
	g.max = max(g.max, g.cur)
	g.cond.Broadcast()
	for !g.open {
		g.cond.Wait()
	}
	g.cur--
	g.mu.Unlock()
	return g.Backend.ReadAt(bufs, lba)
}

// waitHeld blocks until exactly n reads are held, or fails after timeout.
func (g *gatedBackend) waitHeld(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	expired := false
	tm := time.AfterFunc(timeout, func() {
		g.mu.Lock()
		expired = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer tm.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.cur != n && !expired {
		g.cond.Wait()
	}
	if g.cur != n {
		t.Fatalf("%d reads held at the backend after %v, want %d", g.cur, timeout, n)
	}
}

func (g *gatedBackend) release() {
	g.mu.Lock()
	g.open = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// fabricTarget serves be as namespace 1 of testNQN on one listener per
// address, over fabric.
func fabricTarget(t testing.TB, fabric *soft.Fabric, be blockdev.Backend, addrs ...string) (*target.Target, []*rdma.Listener) {
	t.Helper()
	tgt := target.New(target.Options{Logger: quietLogger()})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "e2e0002", AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	var ls []*rdma.Listener
	for i, a := range addrs {
		l, err := rdma.Listen(rdma.Config{
			Provider: soft.New(soft.Options{Fabric: fabric}),
			Target:   tgt, Addr: a, PortID: uint16(i + 1), Logger: quietLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	t.Cleanup(func() {
		for _, l := range ls {
			_ = l.Close()
		}
		_ = tgt.Close()
	})
	return tgt, ls
}

// openSession opens a session to testNQN over paths.
func openSession(t testing.TB, p verbs.Provider, paths []string, queues, depth int, mod ...func(*initiator.SessionOptions)) *initiator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := initiator.SessionOptions{
		Options: initiator.Options{Provider: p, IOQueues: queues, QueueDepth: depth, Logger: quietLogger(),
			KeepAlive: time.Second},
		SubNQN: testNQN, Paths: paths,
		ReconnectDelay: 20 * time.Millisecond, CtrlLossTimeout: 2 * time.Minute,
	}
	for _, f := range mod {
		f(&o)
	}
	s, err := initiator.OpenSession(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// qpRecorder wraps a provider and remembers every QP its connections
// create, for fault injection into the initiator's queues.
type qpRecorder struct {
	verbs.Provider
	mu  sync.Mutex
	qps []verbs.QueuePair
	ids map[string][]verbs.ConnID // provider's IDs by address
}

type recordingID struct {
	verbs.ConnID
	r *qpRecorder
}

func (r *qpRecorder) Resolve(ctx context.Context, addr string, o verbs.ResolveOptions) (verbs.ConnID, error) {
	id, err := r.Provider.Resolve(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if r.ids == nil {
		r.ids = map[string][]verbs.ConnID{}
	}
	r.ids[addr] = append(r.ids[addr], id)
	r.mu.Unlock()
	return &recordingID{ConnID: id, r: r}, nil
}

func (id *recordingID) CreateQP(pd verbs.ProtectionDomain, a verbs.QPInitAttr) (verbs.QueuePair, error) {
	qp, err := id.ConnID.CreateQP(pd, a)
	if err == nil {
		id.r.mu.Lock()
		id.r.qps = append(id.r.qps, qp)
		id.r.mu.Unlock()
	}
	return qp, err
}

// injectAll moves every QP created since the last call to the error
// state (QPs of closed controllers are skipped).
func (r *qpRecorder) injectAll() int {
	r.mu.Lock()
	qps := r.qps
	r.qps = nil
	r.mu.Unlock()
	n := 0
	for _, qp := range qps {
		if soft.InjectQPError(qp) == nil {
			n++
		}
	}
	return n
}

// cutAll pulls the cable of every connection made to addr so far.
func (r *qpRecorder) cutAll(addr string) {
	r.mu.Lock()
	ids := r.ids[addr]
	r.mu.Unlock()
	for _, id := range ids {
		_ = soft.CutLink(id) // already closed ones refuse
	}
}

// asyncLoad keeps slots requests in flight through Session.Submit: each
// slot writes a pattern over its own blocks, reads them back, compares,
// and starts over with a new pattern. Any request error or mismatch fails
// the load.
type asyncLoad struct {
	s          *initiator.Session
	bs         int
	slotBlocks int
	reqs       []initiator.Request
	wbuf, rbuf [][]byte
	gen        []uint64
	done       chan *initiator.Request

	verified atomic.Uint64
	progress chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	exited   chan struct{} // closed by run after err is set
	err      error
}

func startAsyncLoad(t *testing.T, s *initiator.Session, slots, slotBlocks int) *asyncLoad {
	t.Helper()
	l := &asyncLoad{s: s, bs: s.BlockSize(), slotBlocks: slotBlocks,
		reqs: make([]initiator.Request, slots), wbuf: make([][]byte, slots), rbuf: make([][]byte, slots),
		gen: make([]uint64, slots), done: make(chan *initiator.Request, slots),
		progress: make(chan struct{}, 1), stop: make(chan struct{}), exited: make(chan struct{})}
	if int64(slots*slotBlocks*l.bs) > s.Size() {
		t.Fatalf("load of %d x %d blocks exceeds the namespace", slots, slotBlocks)
	}
	for i := range l.reqs {
		l.wbuf[i] = make([]byte, slotBlocks*l.bs)
		l.rbuf[i] = make([]byte, slotBlocks*l.bs)
		l.write(i)
	}
	go l.run()
	t.Cleanup(func() { l.finish(t) })
	return l
}

func (l *asyncLoad) lba(i int) uint64 { return uint64(i * l.slotBlocks) }

func (l *asyncLoad) write(i int) {
	l.gen[i]++
	fillPattern(l.wbuf[i], uint64(i)<<32|l.gen[i], l.lba(i), l.bs)
	l.reqs[i] = initiator.Request{Op: initiator.IOWrite, Off: int64(l.lba(i)) * int64(l.bs),
		Data: l.wbuf[i], Done: l.done, User: uint64(i)}
	_ = l.s.Submit(&l.reqs[i])
}

func (l *asyncLoad) read(i int) {
	clear(l.rbuf[i])
	l.reqs[i] = initiator.Request{Op: initiator.IORead, Off: int64(l.lba(i)) * int64(l.bs),
		Data: l.rbuf[i], Done: l.done, User: uint64(i)}
	_ = l.s.Submit(&l.reqs[i])
}

func (l *asyncLoad) run() {
	outstanding := len(l.reqs)
	var firstErr error
	stopping := false
	stop := l.stop
	for outstanding > 0 {
		var r *initiator.Request
		select {
		case r = <-l.done:
		case <-stop:
			stopping = true
			stop = nil
			continue
		}
		i := int(r.User)
		outstanding--
		switch {
		case r.Err != nil:
			if firstErr == nil {
				firstErr = fmt.Errorf("slot %d %s: %w", i, r.Op, r.Err)
			}
			stopping = true
			continue
		case r.Op == initiator.IORead && !bytes.Equal(r.Data, l.wbuf[i]):
			if firstErr == nil {
				firstErr = fmt.Errorf("slot %d generation %d: read back differs", i, l.gen[i])
			}
			stopping = true
			continue
		case r.Op == initiator.IORead:
			l.verified.Add(1)
			select {
			case l.progress <- struct{}{}:
			default:
			}
		}
		if stopping {
			continue
		}
		outstanding++
		if r.Op == initiator.IOWrite {
			l.read(i)
		} else {
			l.write(i)
		}
	}
	l.err = firstErr
	close(l.exited)
}

// waitVerified blocks until n more slot rounds were verified.
func (l *asyncLoad) waitVerified(t *testing.T, n uint64, timeout time.Duration) {
	t.Helper()
	want := l.verified.Load() + n
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	for l.verified.Load() < want {
		select {
		case <-l.progress:
		case <-l.exited:
			t.Fatalf("load ended early: %v", l.err)
		case <-tm.C:
			t.Fatalf("load made no progress for %v (%d of %d verified)", timeout, l.verified.Load(), want)
		}
	}
}

// finish stops the load, waits for its requests and fails t on any error.
func (l *asyncLoad) finish(t *testing.T) {
	t.Helper()
	l.stopOnce.Do(func() { close(l.stop) })
	select {
	case <-l.exited:
		if l.err != nil {
			t.Fatal(l.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("load did not finish")
	}
}
