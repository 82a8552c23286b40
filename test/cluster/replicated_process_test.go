package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/test/testproc"
	"github.com/rdmablk/rdmablk/test/verifyload"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// replCluster are the cluster settings TestReplicatedOwnerSIGKILL adds to
// procConfig (with a fixed data listener: the session's path to a node
// must survive its restart): a short failover grace and a rebuild rate
// that let the test see a failover and a rebuild under load within
// seconds.
const replCluster = "  failover: {interval: 200ms, grace: 1s}\n  replication: {rebuild_bytes_per_second: %d}\n"

// replRebuildRate is the copy rate of a rebuild in TestReplicatedOwnerSIGKILL:
// a full copy of the volume takes about a second, long enough for the load
// to run through it.
const (
	replVolumeSize  = 16 << 20
	replRebuildRate = 16 << 20
)

// newReplProc is newProc with a fixed data listener (data) and replCluster.
func newReplProc(t *testing.T, id string, bootstrap bool, join, tokenFile string) (p *proc, data string) {
	data = testproc.FreePort(t)
	return newProcConfig(t, id, bootstrap, join, tokenFile, data, fmt.Sprintf(replCluster, replRebuildRate)), data
}

// gapMeter stamps the completions of the I/O that passes through it and
// keeps the longest time between two of them: the time without I/O that
// a host sees across a failover.
type gapMeter struct {
	last   atomic.Int64 // UnixNano of the latest completion; 0 before the first
	maxGap atomic.Int64 // nanoseconds
}

func (g *gapMeter) done() {
	now := time.Now().UnixNano()
	prev := g.last.Swap(now)
	if prev == 0 {
		return
	}
	d := now - prev
	for {
		m := g.maxGap.Load()
		if d <= m || g.maxGap.CompareAndSwap(m, d) {
			return
		}
	}
}

// take returns the longest gap since the last take and starts afresh.
func (g *gapMeter) take() time.Duration { return time.Duration(g.maxGap.Swap(0)) }

// sinceLast is how long ago the latest completion was.
func (g *gapMeter) sinceLast() time.Duration {
	return time.Duration(time.Now().UnixNano() - g.last.Load())
}

// checkedTarget is the verifyload.Target of every worker: I/O through s
// whose successful completions are stamped on g, and which records the
// last acknowledged content per offset (as the Load does) so that the
// test can pause the workers and re-read every acknowledged block at a
// moment of its choosing (verifyPaused); the Load itself re-reads only
// at Finish, when every block has long been overwritten.
type checkedTarget struct {
	s *initiator.Session
	g gapMeter
	// gate is read-held for each call; verifyPaused holds it to pause
	// the workers between calls.
	gate  sync.RWMutex
	mu    sync.Mutex       // guards acked
	acked map[int64][]byte // offset → last acknowledged write (the Load's buffer, never modified)
}

func newCheckedTarget(s *initiator.Session) *checkedTarget {
	return &checkedTarget{s: s, acked: map[int64][]byte{}}
}

func (c *checkedTarget) ReadAt(p []byte, off int64) (int, error) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	n, err := c.s.ReadAt(p, off)
	if err == nil {
		c.g.done()
	}
	return n, err
}

func (c *checkedTarget) WriteAt(p []byte, off int64) (int, error) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	n, err := c.s.WriteAt(p, off)
	if err == nil {
		c.g.done()
		c.mu.Lock()
		c.acked[off] = p
		c.mu.Unlock()
	}
	return n, err
}

// verifyPaused waits (up to d) until every worker's call in progress has
// completed, holds the workers, and re-reads every acknowledged block
// through the session: each must hold its last acknowledged write. It
// returns how many blocks it checked.
func (c *checkedTarget) verifyPaused(t *testing.T, d time.Duration, what string) int {
	t.Helper()
	locked := make(chan struct{})
	go func() { c.gate.Lock(); close(locked) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-locked:
	case <-timer.C:
		t.Fatalf("%s: the load's I/O did not complete within %v", what, d)
	}
	defer c.gate.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var got []byte
	for off, want := range c.acked {
		got = append(got[:0], make([]byte, len(want))...)
		if _, err := c.s.ReadAt(got, off); err != nil {
			t.Fatalf("%s: read at %d: %v", what, off, err)
		}
		c.g.done()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: block at %d is not its last acknowledged write (acknowledged write lost or stale read)", what, off)
		}
	}
	return len(c.acked)
}

// waitPaths waits, waking on the session's path changes, until ok holds
// for its paths; it fails the test after d.
func waitPaths(t *testing.T, s *initiator.Session, d time.Duration, what string, ok func([]initiator.PathInfo) bool) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		ch := s.Changed()
		ps := s.Paths()
		if ok(ps) {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("waiting %v for %s: paths %+v", d, what, ps)
		}
	}
}

// TestReplicatedOwnerSIGKILL (issue 16, Must show 1): three rdmablkd
// processes (soft provider) and a 3-copy volume exported in a subsystem
// that admits one host NQN. Our initiator's Session, as that host, has two
// paths: the owner's listener (ANA optimized) and the listener of the copy
// node the failover will pick (the lowest in-sync node ID, ANA
// inaccessible until then). A verifying load runs through the session;
// the owner is SIGKILLed. The leader's failover watch moves the volume to
// that copy, the session replays on it, and the load goes on without an
// error. No acknowledged write is lost and no read returns stale data:
// every write is read back at once; as soon as I/O resumed the workers
// are held and every block acknowledged so far (by the old owner) is
// re-read through the new one; Finish re-reads the load's blocks. The
// time without I/O (the longest gap between two completions) is logged,
// not asserted (a speed goal); I/O must resume within 60 s. The killed
// node then returns with its data directory; its copy is rebuilt while
// the load keeps running (with a 1 MiB block written while it was down,
// which only the rebuild brings to it) and recorded in sync; after the
// load stops and the daemons exit (owner first), the three backing files
// are byte-identical.
func TestReplicatedOwnerSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs rdmablkd")
	}
	tok := procToken(t)
	ps := make([]*proc, 3)
	data := make([]string, 3)
	ps[0], data[0] = newReplProc(t, "n1", true, "", tok)
	ps[0].start(t)
	for i, id := range []string{"n2", "n3"} {
		ps[i+1], data[i+1] = newReplProc(t, id, false, `"`+ps[0].api+`"`, tok)
		ps[i+1].start(t)
	}
	status := func(p *proc) (api.StatusResponse, error) { return p.status(t) }
	waitMembers(t, ps)

	// The owner is a follower (its loss costs the failover grace, not an
	// election too); the failover will pick the lowest other node ID.
	st, err := status(ps[0])
	if err != nil {
		t.Fatal(err)
	}
	oi := 2
	if ps[oi].id == st.LeaderID {
		oi = 1
	}
	owner := ps[oi]
	var rest []*proc
	var others []string
	for _, p := range ps {
		if p != owner {
			rest = append(rest, p)
			others = append(others, p.id)
		}
	}
	next, nextData := ps[0], data[0] // PickNewOwner: the lowest in-sync node ID (the owner is n2 or n3)
	c := rest[1].client()
	defer c.Close()
	c2 := next.client()
	defer c2.Close()

	const (
		name    = "mp"
		nqn     = "nqn.2026-11.io.rdmablk:mp-sigkill"
		hostNQN = "nqn.2026-11.io.rdmablk:host-mp16"
	)
	if _, err := c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: name, Size: replVolumeSize, BlockSize: 4096,
		Node: owner.id, Replicas: 3, ReplicaNodes: others}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSubsystem(ctx(t), api.CreateSubsystemRequest{NQN: nqn, Node: owner.id, Hosts: []string{hostNQN}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddNamespace(ctx(t), nqn, 1, name); err != nil {
		t.Fatal(err)
	}
	volStatus := func(c *api.Client) (api.VolumeStatus, error) {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.VolumeStatus(cctx, name)
	}
	eventually(t, 60*time.Second, "three copies in sync", func() bool {
		vs, err := volStatus(c)
		return err == nil && vs.InSync == 3 && vs.Volume.State == catalog.VolumeOnline
	})

	sctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := initiator.SessionOptions{
		Options: initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), HostNQN: hostNQN,
			IOQueues: 2, QueueDepth: 16, KeepAlive: 2 * time.Second, ConnectTimeout: 5 * time.Second},
		SubNQN: nqn, Paths: []string{data[oi], nextData},
		ReconnectDelay: 100 * time.Millisecond, CtrlLossTimeout: 60 * time.Second,
	}
	var s *initiator.Session
	eventually(t, 60*time.Second, "a session to the export", func() bool {
		s, err = initiator.OpenSession(sctx, o)
		return err == nil
	})
	defer s.Close()
	waitPaths(t, s, 60*time.Second, "the owner's path optimized and preferred, the copy node's live and inaccessible",
		func(ps []initiator.PathInfo) bool {
			return ps[0].State == initiator.PathLive && ps[0].Preferred && ps[0].ANA == nvme.ANAStateOptimized &&
				ps[1].State == initiator.PathLive && ps[1].ANA == nvme.ANAStateInaccessible
		})

	ct := newCheckedTarget(s)
	g := &ct.g
	load := verifyload.Start(t, verifyload.Config{BlockSize: 4096, Slots: 16, Timeout: 60 * time.Second},
		verifyload.Repeat(ct, 4))
	load.WaitOps(200)
	// Blocks outside the load's region (its 64 blocks are region 0 of
	// the mirror's 1 MiB dirty regions), which the load never
	// overwrites: one written through the old owner, checked on the new
	// one; one written while the old owner is down, which only the
	// rebuild can bring to its copy (the file comparison checks it).
	const staticOld, staticNew = 4 << 20, 8 << 20
	if _, err := ct.WriteAt(bytes.Repeat([]byte("acknowledged by the old owner..\n"), (1<<20)/32), staticOld); err != nil {
		t.Fatal(err)
	}
	before := g.take()

	// SIGKILL the owner with the load running.
	killed := time.Now()
	owner.Kill()
	t.Logf("SIGKILL of owner %s (leader %s) after %d ops", owner.id, st.LeaderID, load.Ops())
	// The workers' calls in progress at the kill are replayed on the new
	// owner; once they completed, with the workers held, every block
	// acknowledged so far (by the old owner) is read back through the new
	// one. Liveness bound: I/O resumes within 60 s.
	blocks := ct.verifyPaused(t, 60*time.Second, "after the owner's SIGKILL")
	resumed := time.Since(killed)
	if vs, err := volStatus(c); err != nil || vs.Owner != next.id || vs.Epoch != 2 {
		t.Fatalf("I/O resumed, volume %+v %v, want owner %s at epoch 2", vs, err, next.id)
	}
	if p := s.Paths()[1]; !p.Preferred || p.ANA != nvme.ANAStateOptimized {
		t.Fatalf("I/O resumed, path to %s: %+v", next.id, p)
	}
	load.WaitOps(200)
	gap := g.take()
	t.Logf("time without I/O: %v (SIGKILL to I/O resumed on %s: %v; %d acknowledged writes re-read there; longest gap before the kill %v)",
		gap.Round(time.Millisecond), next.id, resumed.Round(time.Millisecond), blocks, before.Round(time.Millisecond))
	if _, err := ct.WriteAt(bytes.Repeat([]byte("written while the old owner was down\n"), (1<<20)/37+1)[:1<<20], staticNew); err != nil {
		t.Fatal(err)
	}

	// The killed node returns with its data directory: its copy is
	// rebuilt under the load and rejoins in sync.
	restarted := time.Now()
	owner.start(t)
	opsAtRestart := load.Ops()
	var rebuild *catalog.Rebuild
	var opsSyncing, opsInSync int64 = -1, 0
	eventually(t, 60*time.Second, "the returned copy in sync again", func() bool {
		vs, err := volStatus(c2)
		if err != nil {
			return false
		}
		for _, r := range vs.ReplicaStatus {
			if r.Node == owner.id {
				if r.Rebuild != nil {
					rebuild = r.Rebuild
				}
				if r.State == catalog.ReplicaSyncing && opsSyncing < 0 {
					opsSyncing = load.Ops()
				}
				if r.State == catalog.ReplicaInSync && vs.InSync == 3 {
					opsInSync = load.Ops()
					return true
				}
			}
		}
		if g.sinceLast() > 30*time.Second {
			t.Fatalf("no I/O for %v while %s rebuilds", g.sinceLast(), owner.id)
		}
		return false
	})
	done := next.WaitLog("rebuild done; replica in sync", 10*time.Second,
		func(r testproc.Record) bool { return r.Str("replica") == owner.id })
	duringSync := "not seen"
	if opsSyncing >= 0 {
		duringSync = fmt.Sprint(opsInSync - opsSyncing)
	}
	t.Logf("%s back in sync %v after its restart (rebuild full=%v of %.0f bytes in %.2fs); verified ops: %d from the restart, %s while syncing; longest gap %v",
		owner.id, time.Since(restarted).Round(time.Millisecond), rebuild != nil && rebuild.Full, done.Fields["bytes"], done.Fields["seconds"],
		opsInSync-opsAtRestart, duringSync, g.take().Round(time.Millisecond))
	if opsInSync == opsAtRestart {
		t.Fatal("the load made no progress while the copy was rebuilt")
	}
	load.WaitOps(200)
	load.Finish()
	ct.verifyPaused(t, 60*time.Second, "after the load")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Byte for byte: stop every daemon cleanly (drained and closed), then
	// compare the three backing files.
	vs, err := volStatus(c2)
	if err != nil || vs.Owner != next.id || vs.InSync != 3 {
		t.Fatalf("volume before the comparison: %+v %v", vs, err)
	}
	files := map[string]string{}
	for _, r := range vs.ReplicaStatus {
		for _, p := range ps {
			if p.id == r.Node {
				files[p.id] = filepath.Join(p.dir, "cluster", "volumes", r.Path)
			}
		}
	}
	// The owner first: its shutdown flushes the mirror through the legs,
	// which need the copies' nodes up.
	for _, p := range append([]*proc{next}, owner, rest[1]) {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(60 * time.Second); err != nil {
			t.Errorf("%s exit: %v", p.id, err)
		}
	}
	want, err := os.ReadFile(files[next.id])
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != replVolumeSize {
		t.Fatalf("%s's copy is %d bytes, want %d", next.id, len(want), replVolumeSize)
	}
	for id, f := range files {
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s's copy (%d bytes) differs from the new owner %s's from byte %d", id, len(got), next.id, i)
		}
	}
	if len(files) != 3 {
		t.Fatalf("copies %v, want 3", files)
	}
}
