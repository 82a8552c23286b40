package replica

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/target/tcp"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

const testVolume = "vol1"

var (
	testSubNQN  = catalog.ReplicaNQN(testVolume)
	testHostNQN = catalog.OwnerHostNQN("node1", 3)
)

var addrSeq atomic.Int32

// replicaNode is an in-process replica: a target serving be as namespace
// 1 of ReplicaNQN(testVolume) to OwnerHostNQN("node1", 3) only, with an
// RDMA listener on the soft provider over fabric.
type replicaNode struct {
	tgt     *target.Target
	l       *rdma.Listener
	addr    string
	once    sync.Once
	release func()
}

func newReplica(t testing.TB, fabric *soft.Fabric, be blockdev.Backend) *replicaNode {
	return newReplicaRelease(t, fabric, be, nil)
}

// newReplicaRelease is newReplica with release run first when the node
// stops (a gated backend must let its held commands go before the target
// can drain them).
func newReplicaRelease(t testing.TB, fabric *soft.Fabric, be blockdev.Backend, release func()) *replicaNode {
	t.Helper()
	tgt := target.New(target.Options{Logger: quiet()})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testSubNQN, Serial: "replica01", Hosts: []string{testHostNQN},
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("replica%d:4420", addrSeq.Add(1))
	l, err := rdma.Listen(rdma.Config{
		Provider: soft.New(soft.Options{Fabric: fabric}),
		Target:   tgt, Addr: addr, PortID: 1, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &replicaNode{tgt: tgt, l: l, addr: l.Addr(), release: release}
	t.Cleanup(n.stop)
	return n
}

// stop closes the listener and the target (idempotent): the replica
// node is gone.
func (n *replicaNode) stop() {
	n.once.Do(func() {
		if n.release != nil {
			n.release()
		}
		_ = n.l.Close()
		_ = n.tgt.Close()
	})
}

// listenTCP adds an NVMe/TCP listener on loopback to n (closed when the
// test ends) and returns its leg path ("tcp://ADDR").
func (n *replicaNode) listenTCP(t testing.TB) string {
	t.Helper()
	tl, err := tcp.Listen(tcp.Config{Target: n.tgt, Addr: "127.0.0.1:0", PortID: 2, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tl.Close() })
	return "tcp://" + tl.Addr()
}

// legConfig is a small leg to n over fabric.
func legConfig(fabric *soft.Fabric, n *replicaNode) LegConfig {
	return LegConfig{
		Paths: []string{n.addr}, SubNQN: testSubNQN, HostNQN: testHostNQN, NSID: 1,
		Options: initiator.Options{
			Provider: soft.New(soft.Options{Fabric: fabric}), IOQueues: 2, QueueDepth: 32,
			Logger: quiet(), KeepAlive: time.Second,
		},
		ReconnectDelay: 20 * time.Millisecond,
		Depth:          64,
	}
}

func openLeg(t testing.TB, cfg LegConfig) *Leg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// chanDone is a blockdev.Completion sending the result on a channel.
type chanDone chan error

func (c chanDone) IODone(err error) { c <- err }

// gated blocks WriteAt until open is closed; it hides NonBlocking, so the
// target runs it on its workers.
type gated struct {
	blockdev.Backend
	held  chan struct{} // one send per WriteAt that blocks
	open  chan struct{}
	once  sync.Once
	reads bool // gate ReadAt too
}

// ReadAt blocks like WriteAt when reads is set.
func (g *gated) ReadAt(bufs [][]byte, lba uint64) error {
	if g.reads {
		select {
		case g.held <- struct{}{}:
		default:
		}
		<-g.open
	}
	return g.Backend.ReadAt(bufs, lba)
}

// release lets every held and later WriteAt through (idempotent).
func (g *gated) release() { g.once.Do(func() { close(g.open) }) }

func newGated(be blockdev.Backend) *gated {
	return &gated{Backend: be, held: make(chan struct{}, 64), open: make(chan struct{})}
}

func (g *gated) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	select {
	case g.held <- struct{}{}:
	default:
	}
	<-g.open
	return g.Backend.WriteAt(bufs, lba, f)
}

// membership records faults; fail makes Fault return an error.
type membership struct {
	mu     sync.Mutex
	faults []string
	causes []error
	fail   error
	called chan string
}

func newMembership() *membership { return &membership{called: make(chan string, 16)} }

func (m *membership) Fault(leg string, cause error) error {
	m.mu.Lock()
	m.faults = append(m.faults, leg)
	m.causes = append(m.causes, cause)
	err := m.fail
	m.mu.Unlock()
	select {
	case m.called <- leg:
	default:
	}
	return err
}

// fixedMem is a mem backend with Async and FixedBuffers (completions on a
// goroutine of their own), as a local leg whose memory a target
// registers.
type fixedMem struct {
	blockdev.Backend
	next atomic.Uint64
}

func (f *fixedMem) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	go func() { done.IODone(f.ReadAt([][]byte{buf}, lba)) }()
	return true
}

func (f *fixedMem) SubmitWrite(buf []byte, lba uint64, fl blockdev.WriteFlags, done blockdev.Completion) bool {
	go func() { done.IODone(f.WriteAt([][]byte{buf}, lba, fl)) }()
	return true
}

func (f *fixedMem) RegisterFixed([]byte) (blockdev.FixedRegion, error) {
	return blockdev.FixedRegion(f.next.Add(1)), nil
}
func (f *fixedMem) UnregisterFixed(blockdev.FixedRegion) {}
func (f *fixedMem) SubmitReadFixed(buf []byte, lba uint64, _ blockdev.FixedRegion, done blockdev.Completion) bool {
	return f.SubmitRead(buf, lba, done)
}
func (f *fixedMem) SubmitWriteFixed(buf []byte, lba uint64, fl blockdev.WriteFlags, _ blockdev.FixedRegion, done blockdev.Completion) bool {
	return f.SubmitWrite(buf, lba, fl, done)
}

// within fails the test when ch yields nothing within d (a deadline for
// a hang, not a measurement).
func within[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case v := <-ch:
		return v
	case <-tm.C:
		t.Fatalf("%s: nothing after %v", what, d)
	}
	var zero T
	return zero
}
