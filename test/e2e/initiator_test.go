package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/target/tcp"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// End-to-end tests: the initiator against the real target core and its
// RDMA transport, in one process over an in-memory soft fabric.

const (
	subNQN    = "nqn.2026-01.io.rdmablk:e2e"
	hostNQN   = "nqn.2026-01.io.rdmablk:host-a"
	strangerN = "nqn.2026-01.io.rdmablk:host-b"
)

type env struct {
	fab     *soft.Fabric
	hostP   *soft.Provider
	tgtP    *soft.Provider
	tgt     *target.Target
	ln      *rdma.Listener // nil over NVMe/TCP
	tcpLn   *tcp.Listener  // nil over RDMA
	addr    string         // "tcp://host:port" over NVMe/TCP
	backend *mem.Backend
	digests bool
}

type envConfig struct {
	profile     soft.Profile // host side
	blockSize   int
	blocks      uint64
	maxTransfer int // target MDTS in bytes (0: default)
	inCapsule   int // target in-capsule data size (0: default)
	// tcp serves the subsystem over NVMe/TCP on loopback (target/tcp)
	// instead of the soft RDMA fabric; profile is then unused.
	tcp bool
	// digests asks for NVMe/TCP header and data digests.
	digests bool
}

func newEnv(t testing.TB, cfg envConfig) *env {
	t.Helper()
	if cfg.blockSize == 0 {
		cfg.blockSize = 512
	}
	if cfg.blocks == 0 {
		cfg.blocks = 4096
	}
	quiet := slog.New(slog.DiscardHandler)
	e := &env{fab: soft.NewFabric()}
	e.tgtP = soft.New(soft.Options{Profile: soft.ProfileDefault, Fabric: e.fab})
	e.hostP = soft.New(soft.Options{Profile: cfg.profile, Fabric: e.fab})
	e.tgt = target.New(target.Options{Logger: quiet})
	e.backend = mem.New(cfg.blocks, cfg.blockSize)
	_, err := e.tgt.AddSubsystem(target.SubsystemConfig{
		NQN:        subNQN,
		Hosts:      []string{hostNQN},
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: e.backend}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.tcp {
		e.digests = cfg.digests
		e.tcpLn, err = tcp.Listen(tcp.Config{
			Target: e.tgt, Addr: "127.0.0.1:0", PortID: 1,
			MaxDataTransfer: cfg.maxTransfer, InCapsuleDataSize: cfg.inCapsule, Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		e.addr = "tcp://" + e.tcpLn.Addr()
	} else {
		e.ln, err = rdma.Listen(rdma.Config{
			Provider: e.tgtP, Target: e.tgt, Addr: "192.0.2.1:4420", PortID: 1,
			MaxDataTransfer: cfg.maxTransfer, InCapsuleDataSize: cfg.inCapsule, Logger: quiet,
		})
		if err != nil {
			t.Fatal(err)
		}
		e.addr = e.ln.Addr()
	}
	t.Cleanup(func() {
		e.closeListener()
		_ = e.tgt.Close()
		_ = e.backend.Close()
	})
	return e
}

// closeListener closes the env's listener (drain, then disconnect).
func (e *env) closeListener() error {
	if e.tcpLn != nil {
		return e.tcpLn.Close()
	}
	return e.ln.Close()
}

// transportCase is one binding the contract cases run over: the RDMA
// binding on the soft provider (both profiles) and NVMe/TCP on loopback.
type transportCase struct {
	name    string
	profile soft.Profile
	tcp     bool
	digests bool // NVMe/TCP header and data digests
}

var transports = []transportCase{
	{"rdma-default", soft.ProfileDefault, false, false},
	{"rdma-pvrdma", soft.ProfilePVRDMA, false, false},
	{"tcp", soft.ProfileDefault, true, false},
	{"tcp-digests", soft.ProfileDefault, true, true},
}

// forTransports runs f over every transport (the transport contract
// suite at the initiator / session level).
func forTransports(t *testing.T, f func(t *testing.T, tc transportCase)) {
	for _, tc := range transports {
		t.Run(tc.name, func(t *testing.T) { f(t, tc) })
	}
}

func (e *env) opts() initiator.Options {
	return initiator.Options{
		Provider:     e.hostP,
		HostNQN:      hostNQN,
		Logger:       slog.New(slog.DiscardHandler),
		HeaderDigest: e.digests,
		DataDigest:   e.digests,
	}
}

func (e *env) connect(t testing.TB, o initiator.Options) *initiator.Controller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := initiator.Connect(ctx, e.addr, subNQN, o)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var profiles = []struct {
	name string
	p    soft.Profile
}{
	{"default", soft.ProfileDefault},
	{"pvrdma", soft.ProfilePVRDMA},
}

func forProfiles(t *testing.T, f func(t *testing.T, p soft.Profile)) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) { f(t, pr.p) })
	}
}

func TestE2EConnectIdentify(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 4096, blocks: 1024})
		o := e.opts()
		o.IOQueues = 3
		o.QueueDepth = 64
		c := e.connect(t, o)
		id := c.Identify()
		if c.CNTLID() == 0 || c.CNTLID() == nvme.DynamicCNTLID || id.CNTLID != c.CNTLID() {
			t.Fatalf("CNTLID %d, identify %d", c.CNTLID(), id.CNTLID)
		}
		// Keyed SGL data blocks over RDMA only (the transport's caps).
		if id.SubNQN != subNQN || id.CNTRLTYPE != nvme.CntrlTypeIO || (id.SGLS&nvme.SGLSKeyed != 0) == tc.tcp {
			t.Fatalf("identify: subnqn %q type %d sgls %#x", id.SubNQN, id.CNTRLTYPE, id.SGLS)
		}
		if c.NumQueues() != 3 {
			t.Fatalf("NumQueues %d", c.NumQueues())
		}
		for i := 0; i < c.NumQueues(); i++ {
			if d := c.Queue(i).Depth(); d < 2 || d > 64 {
				t.Fatalf("queue %d depth %d", i, d)
			}
		}
		if c.Queue(3) != nil || c.Queue(-1) != nil {
			t.Fatal("Queue out of range not nil")
		}
		nss := c.Namespaces()
		if len(nss) != 1 {
			t.Fatalf("%d namespaces", len(nss))
		}
		ns := nss[0]
		if ns.NSID() != 1 || ns.BlockSize() != 4096 || ns.Blocks() != 1024 || ns.Size() != 4<<20 {
			t.Fatalf("ns %d bs %d blocks %d size %d", ns.NSID(), ns.BlockSize(), ns.Blocks(), ns.Size())
		}
		select {
		case <-c.Done():
			t.Fatalf("Done closed: %v", c.Err())
		default:
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case <-c.Done():
		default:
			t.Fatal("Done open after Close")
		}
		if !errors.Is(c.Err(), initiator.ErrClosed) {
			t.Fatalf("Err after Close: %v", c.Err())
		}
	})
}

// pattern fills b with the deterministic content of block lba.
func pattern(b []byte, lba uint64, seed uint64) {
	r := rand.New(rand.NewPCG(seed, lba))
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
}

// asyncSweep runs op over blocks [first, first+n) of ns on queue q, depth
// IOs in flight, chunks of chunk blocks. For writes it fills buffers with
// pattern; for reads it checks them.
func asyncSweep(q *initiator.IOQueue, ns *initiator.Namespace, op initiator.IOOp, first, n uint64, chunk uint32, seed uint64) error {
	bs := uint64(ns.BlockSize())
	depth := min(q.Depth(), 32)
	ios := make([]initiator.IO, depth)
	free := make([]*initiator.IO, 0, depth)
	for i := range ios {
		b, ok := q.AllocBuffer()
		if !ok {
			return errors.New("no buffer")
		}
		ios[i].Buf = b
		free = append(free, &ios[i])
	}
	done := make([]*initiator.IO, depth)
	next, end := first, first+n
	inflight := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	check := func(io *initiator.IO) error {
		if err := io.Result(); err != nil {
			return err
		}
		if op == initiator.IORead {
			want := make([]byte, bs)
			for k := uint64(0); k < uint64(io.Blocks); k++ {
				pattern(want, io.LBA+k, seed)
				if !bytes.Equal(io.Buf.Bytes()[k*bs:(k+1)*bs], want) {
					return errors.New("data mismatch at LBA " + itoa(io.LBA+k))
				}
			}
		}
		return nil
	}
	for next < end || inflight > 0 {
		for next < end && len(free) > 0 {
			io := free[len(free)-1]
			free = free[:len(free)-1]
			cnt := uint32(min(uint64(chunk), end-next))
			io.Op, io.NSID, io.LBA, io.Blocks, io.User = op, ns.NSID(), next, cnt, next
			if op == initiator.IOWrite {
				for k := uint64(0); k < uint64(cnt); k++ {
					pattern(io.Buf.Bytes()[k*bs:(k+1)*bs], next+k, seed)
				}
			}
			if err := q.Submit(io); err != nil {
				return err
			}
			next += uint64(cnt)
			inflight++
		}
		if err := q.Wait(ctx); err != nil {
			return err
		}
		m := q.Poll(done)
		for _, io := range done[:m] {
			inflight--
			if err := check(io); err != nil {
				return err
			}
			free = append(free, io)
		}
	}
	for i := range ios {
		q.FreeBuffer(ios[i].Buf)
	}
	return nil
}

func itoa(v uint64) string {
	if v == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b[i:])
}

func TestE2EAsyncPatternWholeNamespace(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 512, blocks: 8192}) // 4 MiB
		o := e.opts()
		o.IOQueues = 4
		o.QueueDepth = 32
		c := e.connect(t, o)
		if c.NumQueues() != 4 {
			t.Fatalf("NumQueues %d", c.NumQueues())
		}
		ns := c.Namespaces()[0]
		per := ns.Blocks() / 4
		for _, op := range []initiator.IOOp{initiator.IOWrite, initiator.IORead} {
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for i := 0; i < 4; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					// Mixed sizes: 8-block chunks (4 KiB, in-capsule
					// when writing) on even queues, 64 on odd ones.
					chunk := uint32(8)
					if i%2 == 1 {
						chunk = 64
					}
					if err := asyncSweep(c.Queue(i), ns, op, uint64(i)*per, per, chunk, 7); err != nil {
						errs <- err
					}
				}(i)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("%v: %v", op, err)
			}
		}
		// The backend holds exactly the pattern.
		want := make([]byte, 512)
		got := make([]byte, 512)
		for lba := uint64(0); lba < ns.Blocks(); lba += 997 {
			pattern(want, lba, 7)
			if err := e.backend.ReadAt([][]byte{got}, lba); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("backend LBA %d differs", lba)
			}
		}
	})
}

func TestE2EReadWriteAtSpanningMDTS(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		// 16 KiB MDTS: a 100-block (50 KiB) transfer is 4 commands.
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 512, blocks: 2048, maxTransfer: 16 << 10})
		o := e.opts()
		o.IOQueues = 2
		o.QueueDepth = 4
		c := e.connect(t, o)
		ns := c.Namespaces()[0]
		rng := rand.New(rand.NewPCG(3, 4))
		shadow := make([]byte, ns.Size())
		var wg sync.WaitGroup
		var mu sync.Mutex
		errs := make(chan error, 16)
		// Disjoint regions per goroutine, odd sizes and offsets.
		type op struct{ off, n int64 }
		var ops []op
		for off := int64(0); off+512*100 <= ns.Size(); off += 512 * 128 {
			ops = append(ops, op{off + 512*int64(rng.IntN(20)), 512 * int64(1+rng.IntN(100))})
		}
		for _, x := range ops {
			wg.Add(1)
			go func(x op) {
				defer wg.Done()
				b := make([]byte, x.n)
				for i := range b {
					b[i] = byte(x.off/512) ^ byte(i*31)
				}
				if n, err := ns.WriteAt(b, x.off); err != nil || n != len(b) {
					errs <- err
					return
				}
				mu.Lock()
				copy(shadow[x.off:], b)
				mu.Unlock()
				r := make([]byte, x.n)
				if n, err := ns.ReadAt(r, x.off); err != nil || n != len(r) {
					errs <- err
					return
				}
				if !bytes.Equal(r, b) {
					errs <- errors.New("read back differs at " + itoa(uint64(x.off)))
				}
			}(x)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		all := make([]byte, ns.Size())
		if n, err := ns.ReadAt(all, 0); err != nil || n != len(all) {
			t.Fatalf("full read: %d %v", n, err)
		}
		if !bytes.Equal(all, shadow) {
			t.Fatal("full read differs from what was written")
		}
		if n, err := ns.ReadAt(make([]byte, 1024), ns.Size()-512); n != 512 || err != io.EOF {
			t.Fatalf("read past end: %d %v", n, err)
		}
		if _, err := ns.WriteAt(make([]byte, 100), 0); !errors.Is(err, initiator.ErrUnaligned) {
			t.Fatalf("unaligned write: %v", err)
		}
		if err := ns.WriteFUA(all[:4096], 8192); err != nil {
			t.Fatalf("WriteFUA: %v", err)
		}
	})
}

func TestE2EFlushZeroesDeallocate(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 4096, blocks: 256})
		c := e.connect(t, e.opts())
		ns := c.Namespaces()[0]
		ones := bytes.Repeat([]byte{0xFF}, int(ns.Size()))
		if _, err := ns.WriteAt(ones, 0); err != nil {
			t.Fatal(err)
		}
		if err := ns.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
		if err := ns.WriteZeroes(4096*10, 4096*20); err != nil {
			t.Fatalf("WriteZeroes: %v", err)
		}
		if err := ns.Deallocate(4096*100, 4096*50); err != nil {
			t.Fatalf("Deallocate: %v", err)
		}
		got := make([]byte, ns.Size())
		if _, err := ns.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		for blk := 0; blk < 256; blk++ {
			want := byte(0xFF)
			if blk >= 10 && blk < 30 || blk >= 100 && blk < 150 {
				want = 0
			}
			b := got[blk*4096 : (blk+1)*4096]
			if !bytes.Equal(b, bytes.Repeat([]byte{want}, 4096)) {
				t.Fatalf("block %d not %#x", blk, want)
			}
		}
	})
}

func TestE2EHostNotAllowed(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests})
		o := e.opts()
		o.HostNQN = strangerN
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := initiator.Connect(ctx, e.addr, subNQN, o)
		if err == nil {
			_ = c.Close()
			t.Fatal("connect of a host not on the allow list succeeded")
		}
		if !errors.Is(err, nvme.StatusConnectInvalidHost) {
			t.Fatalf("got %v, want nvme.StatusConnectInvalidHost", err)
		}
		var se *initiator.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("not a *StatusError: %T", err)
		}
	})
}

func TestE2EDiscover(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		entries, err := initiator.Discover(ctx, e.addr, e.opts())
		if err != nil {
			t.Fatalf("Discover: %v", err)
		}
		found := false
		for _, en := range entries {
			if en.SubNQN == subNQN {
				found = true
				if want := map[bool]uint8{false: nvme.TrTypeRDMA, true: nvme.TrTypeTCP}[tc.tcp]; en.TrType != want || en.SubType != nvme.SubTypeNVM {
					t.Fatalf("entry %+v", en)
				}
			}
		}
		if !found {
			t.Fatalf("subsystem not in discovery log: %+v", entries)
		}
	})
}

func TestE2EConnectUnreachable(t *testing.T) {
	e := newEnv(t, envConfig{profile: soft.ProfileDefault})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := initiator.Connect(ctx, "192.0.2.99:4420", subNQN, e.opts()); err == nil {
		t.Fatal("connect to nothing succeeded")
	}
	if _, err := initiator.Connect(ctx, e.addr, "nqn.2026-01.io.rdmablk:nope", e.opts()); err == nil {
		t.Fatal("connect to an unknown subsystem succeeded")
	}
}

func TestE2EControllerLost(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 512, blocks: 4096})
		o := e.opts()
		o.IOQueues = 2
		c := e.connect(t, o)
		ns := c.Namespaces()[0]
		q := c.Queue(0)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()

		// A driver keeps 8 reads in flight until the controller is lost.
		warm := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			ios := make([]initiator.IO, 8)
			done := make([]*initiator.IO, 8)
			for i := range ios {
				b, _ := q.AllocBuffer()
				ios[i] = initiator.IO{Op: initiator.IORead, NSID: ns.NSID(), LBA: uint64(i), Blocks: 1, Buf: b}
				if err := q.Submit(&ios[i]); err != nil {
					result <- err
					return
				}
			}
			completed, lost := 0, 0
			inflight := len(ios)
			for inflight > 0 {
				if err := q.Wait(ctx); err != nil {
					result <- err
					return
				}
				n := q.Poll(done)
				for _, io := range done[:n] {
					inflight--
					completed++
					if completed == 100 {
						close(warm)
					}
					var se *initiator.StatusError
					switch err := io.Result(); {
					case err == nil, errors.As(err, &se):
						// Finished before the listener closed, or
						// refused by the draining target (SQ deleted,
						// command sequence error once its controller
						// is gone): NVMe statuses, not transport errors.
					case errors.Is(err, initiator.ErrControllerLost):
						lost++
						continue
					default:
						result <- err
						return
					}
					if lost > 0 {
						continue
					}
					io.LBA = (io.LBA + 8) % ns.Blocks()
					if err := q.Submit(io); err == nil {
						inflight++
					} else if !errors.Is(err, initiator.ErrControllerLost) {
						result <- err
						return
					}
				}
			}
			if completed < 100 {
				close(warm)
			}
			result <- nil
		}()
		select {
		case <-warm:
		case err := <-result:
			t.Fatalf("driver ended early: %v", err)
		}
		closed := make(chan error, 1)
		go func() { closed <- e.closeListener() }() // drains, then disconnects
		select {
		case <-c.Done():
		case <-ctx.Done():
			t.Fatal("controller not lost after the listener closed")
		}
		if !errors.Is(c.Err(), initiator.ErrControllerLost) {
			t.Fatalf("Err %v", c.Err())
		}
		select {
		case err := <-result:
			if err != nil {
				t.Fatalf("driver: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("outstanding IOs not returned after the loss")
		}
		if _, err := ns.ReadAt(make([]byte, 512), 0); !errors.Is(err, initiator.ErrControllerLost) {
			t.Fatalf("ReadAt after loss: %v", err)
		}
		if err := q.Submit(&initiator.IO{Op: initiator.IOFlush, NSID: 1}); !errors.Is(err, initiator.ErrControllerLost) {
			t.Fatalf("Submit after loss: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("Close after loss: %v", err)
		}
		if err := <-closed; err != nil {
			t.Logf("listener close: %v", err)
		}
	})
}

// BenchmarkRead4K: 4 KiB reads at QD16 through the raw IOQueue API over
// every transport (tcp: target/tcp on loopback in-process); 0 allocations
// per read expected.
func BenchmarkRead4K(b *testing.B) {
	for _, tc := range transports {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests, blockSize: 4096, blocks: 1024})
			o := e.opts()
			o.IOQueues = 1
			o.QueueDepth = 32
			c := e.connect(b, o)
			ns := c.Namespaces()[0]
			q := c.Queue(0)
			const qd = 16
			ios := make([]initiator.IO, qd)
			for i := range ios {
				buf, _ := q.AllocBuffer()
				ios[i] = initiator.IO{Op: initiator.IORead, NSID: ns.NSID(), LBA: uint64(i), Blocks: 1, Buf: buf}
			}
			done := make([]*initiator.IO, qd)
			ctx := context.Background()
			b.SetBytes(4096)
			b.ReportAllocs()
			b.ResetTimer()
			submitted, completed := 0, 0
			for i := range ios {
				if submitted < b.N {
					if err := q.Submit(&ios[i]); err != nil {
						b.Fatal(err)
					}
					submitted++
				}
			}
			for completed < b.N {
				if err := q.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				n := q.Poll(done)
				for _, io := range done[:n] {
					if io.Err != nil || !io.Status.OK() {
						b.Fatal(io.Result())
					}
					completed++
					if submitted < b.N {
						io.LBA = (io.LBA + qd) % ns.Blocks()
						if err := q.Submit(io); err != nil {
							b.Fatal(err)
						}
						submitted++
					}
				}
			}
		})
	}
}

func TestE2ETransportPaths(t *testing.T) {
	// Small writes go in-capsule, large ones by RDMA READ of the keyed
	// buffer, reads by RDMA WRITE; no command is refused.
	e := newEnv(t, envConfig{profile: soft.ProfilePVRDMA, blockSize: 512, blocks: 1024})
	c := e.connect(t, e.opts())
	ns := c.Namespaces()[0]
	if _, err := ns.WriteAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.WriteAt(make([]byte, 64<<10), 8192); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.ReadAt(make([]byte, 64<<10), 0); err != nil {
		t.Fatal(err)
	}
	st := e.ln.Stats()
	if st.InCapsuleBytes < 4096 || st.BytesFromHost < 64<<10 || st.BytesToHost < 64<<10 {
		t.Fatalf("stats %+v", st)
	}
	if st.CommandErrors != 0 || st.QueueErrors != 0 {
		t.Fatalf("target saw errors: %+v", st)
	}
}

func TestE2ERejectedByTarget(t *testing.T) {
	// A host device with no responder resources cannot serve the
	// target's RDMA READs: the target rejects the CM request (INVALID_IRD).
	e := newEnv(t, envConfig{profile: soft.ProfileDefault})
	o := e.opts()
	o.Provider = soft.New(soft.Options{Profile: soft.ProfilePVRDMA, Fabric: e.fab,
		Tune: func(a *verbs.DeviceAttr) { a.MaxQPRdAtom = 0 }})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := initiator.Connect(ctx, e.addr, subNQN, o)
	var ce *initiator.ConnectRejectedError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want *ConnectRejectedError", err)
	}
	if ce.QID != 0 || ce.Status != nvme.CMRejectInvalidIRD {
		t.Fatalf("reject %+v", ce)
	}
}

func TestE2ENamespaceChangeRescans(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests})
		rescans := make(chan error, 4)
		o := e.opts()
		o.OnRescan = func(err error) { rescans <- err }
		c := e.connect(t, o)
		if n := len(c.Namespaces()); n != 1 {
			t.Fatalf("%d namespaces", n)
		}
		sub, ok := e.tgt.Subsystem(subNQN)
		if !ok {
			t.Fatal("no subsystem")
		}
		b2 := mem.New(100, 4096)
		t.Cleanup(func() { _ = b2.Close() })
		if err := sub.AddNamespace(target.NamespaceConfig{NSID: 5, Backend: b2}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-rescans:
			if err != nil {
				t.Fatalf("rescan: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no rescan after a namespace was added")
		}
		ns, err := c.Namespace(5)
		if err != nil {
			t.Fatalf("new namespace not visible: %v (have %d)", err, len(c.Namespaces()))
		}
		if ns.BlockSize() != 4096 || ns.Blocks() != 100 {
			t.Fatalf("new namespace bs %d blocks %d", ns.BlockSize(), ns.Blocks())
		}
		if _, err := ns.WriteAt(bytes.Repeat([]byte{1}, 4096), 4096); err != nil {
			t.Fatal(err)
		}
		// A second event is delivered too (the AER was re-armed and the log
		// read acknowledged the first one).
		if err := sub.RemoveNamespace(5); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-rescans:
			if err != nil {
				t.Fatalf("rescan: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no rescan after a namespace was removed")
		}
		if _, err := c.Namespace(5); !errors.Is(err, initiator.ErrNoNamespace) {
			t.Fatalf("removed namespace still visible: %v", err)
		}
	})
}

func TestE2EKeepAlive(t *testing.T) {
	forTransports(t, func(t *testing.T, tc transportCase) {
		e := newEnv(t, envConfig{profile: tc.profile, tcp: tc.tcp, digests: tc.digests})
		kept := make(chan error, 16)
		o := e.opts()
		o.OnKeepAlive = func(err error) {
			select {
			case kept <- err:
			default:
			}
		}
		o.KeepAlive = 100 * time.Millisecond
		c := e.connect(t, o)
		for i := 0; i < 3; i++ {
			select {
			case err := <-kept:
				if err != nil {
					t.Fatalf("keep alive %d: %v", i, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("no keep alive sent")
			}
		}
		if err := c.Err(); err != nil {
			t.Fatalf("controller: %v", err)
		}
	})
}

func BenchmarkReadAt4K(b *testing.B) {
	e := newEnv(b, envConfig{profile: soft.ProfilePVRDMA, blockSize: 4096, blocks: 1024})
	o := e.opts()
	o.IOQueues = 2
	o.QueueDepth = 32
	c := e.connect(b, o)
	ns := c.Namespaces()[0]
	b.SetBytes(4096)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		p := make([]byte, 4096)
		off := int64(0)
		for pb.Next() {
			if _, err := ns.ReadAt(p, off); err != nil {
				b.Error(err)
				return
			}
			off = (off + 4096) % ns.Size()
		}
	})
}

// TestAdminExecAfterLossReturns: admin commands issued after the
// controller died (every connection cut) return the dead-controller error
// promptly, never wait forever — also in the window where the admin
// poller is failing what was outstanding (the asynchronous event loop
// re-issues its request in exactly that window during Close).
func TestAdminExecAfterLossReturns(t *testing.T) {
	e := newEnv(t, envConfig{profile: soft.ProfileDefault, blockSize: 4096, blocks: 64})
	rec := &qpRecorder{Provider: e.hostP}
	o := e.opts()
	o.Provider = rec
	c := e.connect(t, o)
	if c.Identify().CMIC&nvme.CMICANA == 0 {
		t.Fatal("the target does not report ANA: ANAState would not reach the admin queue")
	}
	rec.cutAll(e.addr)
	done := make(chan error, 1)
	go func() {
		<-c.Done()
		for range 50 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := c.ANAState(ctx, 1)
			expired := ctx.Err() != nil
			cancel()
			if err == nil {
				done <- errors.New("admin command succeeded on a lost controller")
				return
			}
			if expired {
				done <- fmt.Errorf("admin command on a lost controller waited for its deadline: %w", err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("admin command on a lost controller never returned")
	}
}
