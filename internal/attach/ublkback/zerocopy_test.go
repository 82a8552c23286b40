package ublkback_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach/ublkback"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/ublk"
	"github.com/rdmablk/rdmablk/ublk/ublktest"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const testNQN = "nqn.2026-11.io.rdmablk:ublkback"

var profiles = []struct {
	name string
	p    soft.Profile
}{
	{"default", soft.ProfileDefault},
	{"pvrdma", soft.ProfilePVRDMA},
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// serve exports be as namespace 1 of testNQN at addr on fab.
func serve(t testing.TB, fab *soft.Fabric, be blockdev.Backend, addr string) string {
	t.Helper()
	return serveN(t, fab, be, addr)[0]
}

// serveN is serve with one listener per address.
func serveN(t testing.TB, fab *soft.Fabric, be blockdev.Backend, addrs ...string) []string {
	t.Helper()
	tgt := target.New(target.Options{Logger: quiet()})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "ublkback01", AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tgt.Close() })
	var out []string
	for i, a := range addrs {
		l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt, Addr: a, PortID: uint16(i + 1), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		out = append(out, l.Addr())
	}
	return out
}

func open(t testing.TB, p verbs.Provider, addr string, queues, depth int) *initiator.Session {
	t.Helper()
	return openPaths(t, p, []string{addr}, queues, depth)
}

func openPaths(t testing.TB, p verbs.Provider, paths []string, queues, depth int) *initiator.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := initiator.OpenSession(ctx, initiator.SessionOptions{
		Options: initiator.Options{Provider: p, IOQueues: queues, QueueDepth: depth, Logger: quiet(), KeepAlive: time.Second},
		SubNQN:  testNQN, Paths: paths, ReconnectDelay: 20 * time.Millisecond, CtrlLossTimeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type completion struct {
	tag   uint16
	errno syscall.Errno
}

type chanCompleter chan completion

func (c chanCompleter) Complete(tag uint16, errno syscall.Errno) { c <- completion{tag, errno} }

// TestZeroCopyBackendSuite: the ublk.Backend contract suite over a
// session (soft provider, both profiles) moves every byte between the
// tag buffers and the target by RDMA, with no copy in the initiator
// (SessionStats.CopiedBytes stays 0); a blocking read into a plain Go
// slice of the same session still takes the copy path.
func TestZeroCopyBackendSuite(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			fab := soft.NewFabric()
			addr := serve(t, fab, mem.New(4096, 512), "zc:4420")
			s := open(t, soft.New(soft.Options{Profile: pr.p, Fabric: fab}), addr, 2, 8)
			b, err := ublkback.New(s)
			if err != nil {
				t.Fatal(err)
			}
			ublktest.RunBackendSuite(t, b)
			st := s.Stats()
			if st.CopiedBytes != 0 || st.ZeroCopyBytes == 0 {
				t.Fatalf("ublk path: copied %d bytes, zero-copy %d; want 0 and > 0", st.CopiedBytes, st.ZeroCopyBytes)
			}
			if _, err := s.ReadAt(make([]byte, 4096), 0); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.CopiedBytes != 4096 {
				t.Fatalf("unregistered read: copied %d bytes, want 4096", st.CopiedBytes)
			}
		})
	}
}

// gated holds every ReadAt until release (it hides NonBlocking, so the
// target runs reads on worker goroutines).
type gated struct {
	blockdev.Backend
	mu   sync.Mutex
	cond *sync.Cond
	open bool
	cur  int
}

func (g *gated) ReadAt(bufs [][]byte, lba uint64) error {
	g.mu.Lock()
	g.cur++
	g.cond.Broadcast()
	for !g.open {
		g.cond.Wait()
	}
	g.cur--
	g.mu.Unlock()
	return g.Backend.ReadAt(bufs, lba)
}

func (g *gated) waitHeld(t *testing.T, n int) {
	t.Helper()
	expired := false
	tm := time.AfterFunc(time.Minute, func() {
		g.mu.Lock()
		expired = true
		g.cond.Broadcast()
		g.mu.Unlock()
	})
	defer tm.Stop()
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.cur < n && !expired {
		g.cond.Wait()
	}
	if g.cur < n {
		t.Fatalf("%d reads held at the target, want %d", g.cur, n)
	}
}

func (g *gated) release() {
	g.mu.Lock()
	g.open = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// qpRecorder remembers the QPs its connections create, to inject errors.
type qpRecorder struct {
	verbs.Provider
	mu  sync.Mutex
	qps []verbs.QueuePair
}

type recID struct {
	verbs.ConnID
	r *qpRecorder
}

func (r *qpRecorder) Resolve(ctx context.Context, addr string, o verbs.ResolveOptions) (verbs.ConnID, error) {
	id, err := r.Provider.Resolve(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	return &recID{ConnID: id, r: r}, nil
}

func (id *recID) CreateQP(pd verbs.ProtectionDomain, a verbs.QPInitAttr) (verbs.QueuePair, error) {
	qp, err := id.ConnID.CreateQP(pd, a)
	if err == nil {
		id.r.mu.Lock()
		id.r.qps = append(id.r.qps, qp)
		id.r.mu.Unlock()
	}
	return qp, err
}

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

// TestZeroCopyReplayAfterQPError: reads whose data goes straight into the
// registered tag buffers are held at the target while every QP of the
// controller is moved to the error state. The controller is lost, the
// session reconnects — the new controller registers the tag buffers on
// its own protection domain before it carries I/O — and replays the
// reads: each completes once, with the right data, still without a copy.
// Writes before and after the reconnect go out of the tag buffers too.
// gatedRig is a session of one queue × 8 over the soft provider with a
// QP recorder (for error injection) to a target serving a gated memory
// disk at addr, and its ublk backend.
func gatedRig(t *testing.T, p soft.Profile, addr string) (*mem.Backend, *gated, *qpRecorder, *initiator.Session, *ublkback.Backend) {
	t.Helper()
	fab := soft.NewFabric()
	disk := mem.New(4096, 512)
	g := &gated{Backend: disk, open: true}
	g.cond = sync.NewCond(&g.mu)
	addr = serve(t, fab, g, addr)
	rec := &qpRecorder{Provider: soft.New(soft.Options{Profile: p, Fabric: fab})}
	s := open(t, rec, addr, 1, 8)
	b, err := ublkback.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return disk, g, rec, s, b
}

// submitTags submits op on tags 0..n-1 of q, size bytes at tag × size,
// each tag's buffer filled by fill first; it returns the requests (they
// must live until they complete).
func submitTags(q ublk.BackendQueue, op ublk.Op, n, size int, fill func(tag int, buf []byte)) []ublk.Request {
	reqs := make([]ublk.Request, n)
	for tag := range n {
		buf := q.Buffer(uint16(tag))[:size]
		fill(tag, buf)
		reqs[tag] = ublk.Request{Op: op, Offset: uint64(tag * size), Length: uint64(size), Data: buf}
		q.Submit(uint16(tag), &reqs[tag])
	}
	return reqs
}

func TestZeroCopyReplayAfterQPError(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			disk, g, rec, s, b := gatedRig(t, pr.p, "zcreplay:4420")
			const n, size = 4, 8192
			c := make(chanCompleter, 8)
			q, err := b.OpenQueue(0, 8, c)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			want := func(tag int) []byte {
				p := make([]byte, size)
				for i := range p {
					p[i] = byte(i*31 + tag*7 + 1)
				}
				return p
			}
			run := func(op ublk.Op, fill func(tag int, buf []byte)) {
				submitTags(q, op, n, size, fill)
				q.(ublk.Flusher).Flush() // as the ublk queue goroutine does after a burst
			}
			wait := func(what string) {
				seen := map[uint16]bool{}
				for range n {
					got := <-c
					if got.errno != 0 || seen[got.tag] {
						t.Fatalf("%s: tag %d errno %v (seen before: %v)", what, got.tag, got.errno, seen[got.tag])
					}
					seen[got.tag] = true
				}
			}
			run(ublk.OpWrite, func(tag int, buf []byte) { copy(buf, want(tag)) })
			wait("write")

			g.mu.Lock()
			g.open = false
			g.mu.Unlock()
			connects := s.Paths()[0].Connects
			ch := s.Changed()
			run(ublk.OpRead, func(_ int, buf []byte) {
				for i := range buf {
					buf[i] = 0xEE
				}
			})
			g.waitHeld(t, 1)
			if rec.injectAll() == 0 {
				t.Fatal("no QP to inject an error into")
			}
			g.release()
			for s.Paths()[0].Connects == connects {
				select {
				case <-ch:
					ch = s.Changed()
				case <-time.After(time.Minute):
					t.Fatal("no reconnect after the QP errors")
				}
			}
			wait("read across the QP error")
			for tag := range n {
				if !bytes.Equal(q.Buffer(uint16(tag))[:size], want(tag)) {
					t.Fatalf("tag %d: read returned other data", tag)
				}
			}
			if s.Replays() == 0 {
				t.Fatal("no command was replayed")
			}
			// Writes after the reconnect, read back through the target.
			run(ublk.OpWrite, func(tag int, buf []byte) { copy(buf, want(tag+100)) })
			wait("write after reconnect")
			for tag := range n {
				got := make([]byte, size)
				if err := disk.ReadAt([][]byte{got}, uint64(tag*size/512)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want(tag+100)) {
					t.Fatalf("tag %d: the target holds other data after the write", tag)
				}
			}
			if st := s.Stats(); st.CopiedBytes != 0 || st.ZeroCopyBytes < 3*n*size {
				t.Fatalf("copied %d bytes, zero-copy %d; want 0 and ≥ %d", st.CopiedBytes, st.ZeroCopyBytes, 3*n*size)
			}
		})
	}
}

// BenchmarkQueueRead4KZeroCopy: 4 KiB reads through the adapter into the
// registered tag buffers (Submit, the initiator with no copy, the
// completion goroutine, Complete), the queue's depth in flight. 0 allocs
// per read expected.
func BenchmarkQueueRead4KZeroCopy(b *testing.B) {
	fab := soft.NewFabric()
	addr := serve(b, fab, mem.New(1<<15, 512), "zcbench:4420")
	s := open(b, soft.New(soft.Options{Fabric: fab}), addr, 1, 32)
	be, err := ublkback.New(s)
	if err != nil {
		b.Fatal(err)
	}
	depth := be.Geometry().Depth
	c := make(chanCompleter, depth)
	q, err := be.OpenQueue(0, depth, c)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	fl := q.(ublk.Flusher)
	reqs := make([]ublk.Request, depth)
	blocks := uint64(s.Size()) / 4096
	next := uint64(0)
	submit := func(tag uint16) {
		r := &reqs[tag]
		*r = ublk.Request{Op: ublk.OpRead, Offset: (next % blocks) * 4096, Length: 4096, Data: q.Buffer(tag)[:4096]}
		next++
		q.Submit(tag, r)
	}
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		if inFlight < depth {
			submit(uint16(inFlight))
			inFlight++
			continue
		}
		fl.Flush() // as the ublk queue goroutine does before it waits
		got := <-c
		if got.errno != 0 {
			b.Fatal(got.errno)
		}
		submit(got.tag)
	}
	fl.Flush()
	for ; inFlight > 0; inFlight-- {
		<-c
	}
	b.StopTimer()
	if st := s.Stats(); st.CopiedBytes != 0 {
		b.Fatalf("copied %d bytes", st.CopiedBytes)
	}
}

// TestRegisterBuffer: the Session API itself. Bad registrations are
// refused with ErrInvalid; a region registered on a two-path session is
// used zero-copy by the blocking API on the first path and, after that
// path's controller is lost (its listener closed), on the second; once
// the region is closed its memory takes the copy path; after Close of
// the session RegisterBuffer fails with ErrSessionClosed.
func TestRegisterBuffer(t *testing.T) {
	fab := soft.NewFabric()
	lsAddrs := []string{"rb-a:4420", "rb-b:4420"}
	tgt := target.New(target.Options{Logger: quiet()})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "ublkback02", AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: mem.New(1024, 512)}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tgt.Close() })
	var ls []*rdma.Listener
	for i, a := range lsAddrs {
		l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt, Addr: a, PortID: uint16(i + 1), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		ls = append(ls, l)
	}
	s := openPaths(t, soft.New(soft.Options{Profile: soft.ProfilePVRDMA, Fabric: fab}), []string{ls[0].Addr(), ls[1].Addr()}, 2, 8)
	for s.Paths()[1].State != initiator.PathLive { // both controllers carry the region
		select {
		case <-s.Changed():
		case <-time.After(time.Minute):
			t.Fatal("second path not live")
		}
	}
	if _, err := s.RegisterBuffer(nil); !errors.Is(err, initiator.ErrInvalid) {
		t.Fatalf("empty buffer: %v", err)
	}
	region, err := syscall.Mmap(-1, 0, 64<<10, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(region)
	m, err := s.RegisterBuffer(region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RegisterBuffer(region[4096:8192]); !errors.Is(err, initiator.ErrInvalid) {
		t.Fatalf("overlapping buffer: %v", err)
	}
	for i := range 16 << 10 {
		region[i] = byte(i * 3)
	}
	if _, err := s.WriteAt(region[:16<<10], 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(region[16<<10:32<<10], 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(region[:16<<10], region[16<<10:32<<10]) {
		t.Fatal("read back other data")
	}
	if st := s.Stats(); st.CopiedBytes != 0 || st.ZeroCopyBytes != 32<<10 {
		t.Fatalf("first path: copied %d, zero-copy %d", st.CopiedBytes, st.ZeroCopyBytes)
	}
	b1 := ls[1].Stats().BytesToHost
	ch := s.Changed()
	_ = ls[0].Close() // the first path's controller is lost
	for s.Paths()[0].State == initiator.PathLive {
		select {
		case <-ch:
			ch = s.Changed()
		case <-time.After(time.Minute):
			t.Fatal("first path still live after its listener closed")
		}
	}
	clear(region[32<<10 : 48<<10])
	if _, err := s.ReadAt(region[32<<10:48<<10], 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(region[:16<<10], region[32<<10:48<<10]) {
		t.Fatal("second path: read back other data")
	}
	if ls[1].Stats().BytesToHost == b1 {
		t.Fatal("the read did not go to the second path")
	}
	if st := s.Stats(); st.CopiedBytes != 0 || st.ZeroCopyBytes != 48<<10 {
		t.Fatalf("second path: copied %d, zero-copy %d", st.CopiedBytes, st.ZeroCopyBytes)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.ReadAt(region[48<<10:52<<10], 0); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.CopiedBytes != 4096 {
		t.Fatalf("after the region's Close: copied %d, want 4096", st.CopiedBytes)
	}
	s.Close()
	if _, err := s.RegisterBuffer(region); !errors.Is(err, initiator.ErrSessionClosed) {
		t.Fatalf("after session Close: %v", err)
	}
}

// TestRegisterBufferDuringReconnects: write/read-verify requests on a
// registered region run through Session.Submit while another goroutine
// registers and closes a second region in a loop and the test injects QP
// errors three times (each a lost controller, a reconnect and replays).
// No request fails or returns other data, and the first region's traffic
// is never copied: every new controller had it registered before it
// carried I/O. Run under -race, this also checks the region tables
// against the queue goroutines.
func TestRegisterBufferDuringReconnects(t *testing.T) {
	fab := soft.NewFabric()
	addr := serve(t, fab, mem.New(4096, 512), "rbrc:4420")
	rec := &qpRecorder{Provider: soft.New(soft.Options{Profile: soft.ProfilePVRDMA, Fabric: fab})}
	s := open(t, rec, addr, 2, 8)
	const slots, size = 8, 8192
	region, err := syscall.Mmap(-1, 0, 2*slots*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(region)
	m, err := s.RegisterBuffer(region)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	other := make([]byte, 64<<10)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // register and deregister another region meanwhile
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			o, err := s.RegisterBuffer(other)
			if err != nil {
				t.Error(err)
				return
			}
			if err := o.Close(); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	done := make(chan *initiator.Request, 2*slots)
	reqs := make([]initiator.Request, 2*slots)
	verified := make(chan struct{}, 2*slots)
	gen := make([]byte, slots)
	start := func(i int) { // slot i: write a pattern, then read it back
		w := &reqs[2*i]
		gen[i]++
		src := region[2*i*size : (2*i+1)*size]
		for k := range src {
			src[k] = byte(k) ^ gen[i] ^ byte(i*17)
		}
		*w = initiator.Request{Op: initiator.IOWrite, Off: int64(i * size), Data: src, Done: done, User: uint64(2 * i)}
		if err := s.Submit(w); err != nil {
			t.Error(err)
		}
	}
	for i := range slots {
		start(i)
	}
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		for {
			select {
			case <-stop:
				for range slots { // drain the requests in flight
					<-done
				}
				return
			case got := <-done:
				if got.Err != nil {
					t.Errorf("request %d: %v", got.User, got.Err)
				}
				i := int(got.User / 2)
				if got.User%2 == 0 { // write done: read it back
					dst := region[(2*i+1)*size : (2*i+2)*size]
					clear(dst)
					r := &reqs[2*i+1]
					*r = initiator.Request{Op: initiator.IORead, Off: int64(i * size), Data: dst, Done: done, User: uint64(2*i + 1)}
					if err := s.Submit(r); err != nil {
						t.Error(err)
					}
					continue
				}
				if !bytes.Equal(region[2*i*size:(2*i+1)*size], region[(2*i+1)*size:(2*i+2)*size]) {
					t.Errorf("slot %d: read back other data", i)
				}
				select {
				case verified <- struct{}{}:
				default:
				}
				start(i)
			}
		}
	}()
	waitVerified := func(n int) {
		for range n {
			select {
			case <-verified:
			case <-time.After(time.Minute):
				t.Fatal("no verified slot for a minute")
			}
		}
	}
	for range 3 {
		waitVerified(20)
		connects := s.Paths()[0].Connects
		ch := s.Changed()
		if rec.injectAll() == 0 {
			t.Fatal("no QP to inject an error into")
		}
		for s.Paths()[0].Connects == connects {
			select {
			case <-ch:
				ch = s.Changed()
			case <-time.After(time.Minute):
				t.Fatal("no reconnect")
			}
		}
	}
	waitVerified(20)
	close(stop)
	<-loop
	wg.Wait()
	st := s.Stats()
	if st.Replays == 0 {
		t.Fatal("no command was replayed")
	}
	if st.CopiedBytes != 0 {
		t.Fatalf("copied %d bytes of registered traffic", st.CopiedBytes)
	}
}

// TestZeroCopySeveralRegions: a queue whose tag buffers exceed one
// MemRegion (lowered here from 1 GiB to 3 tag buffers and a page) registers them as
// several regions of whole buffers: the contract suite still moves every
// byte without a copy, and Close deregisters them all (a second queue on
// the same memory range could not register otherwise).
func TestZeroCopySeveralRegions(t *testing.T) {
	fab := soft.NewFabric()
	addr := serve(t, fab, mem.New(4096, 512), "zcregions:4420")
	s := open(t, soft.New(soft.Options{Fabric: fab}), addr, 1, 8)
	b, err := ublkback.New(s)
	if err != nil {
		t.Fatal(err)
	}
	defer ublkback.SetRegionBytes(3*int(b.Geometry().MaxTransfer) + 4096)()
	ublktest.RunBackendSuite(t, b)
	if st := s.Stats(); st.CopiedBytes != 0 || st.ZeroCopyBytes == 0 {
		t.Fatalf("copied %d bytes, zero-copy %d; want 0 and > 0", st.CopiedBytes, st.ZeroCopyBytes)
	}
}
