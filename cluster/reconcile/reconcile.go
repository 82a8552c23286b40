package reconcile

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// Catalog is the replicated state as the reconciler reads it
// (*cluster.Node).
type Catalog interface {
	View(fn func(st *catalog.State))
	Watch() (<-chan struct{}, func())
}

// Target is what the reconciler needs of the node's NVMe target
// (*target.Target): its subsystems and ports, and the discovery notice.
// All methods may be called from the reconciler's goroutine at any time.
type Target interface {
	Subsystem(nqn string) (*target.Subsystem, bool)
	AddSubsystem(c target.SubsystemConfig) (*target.Subsystem, error)
	RemoveSubsystem(nqn string) error
	Ports() []target.Port
	NotifyDiscoveryChanged()
}

// Proposer applies commands through the leader (*server.Server).
type Proposer interface {
	Propose(ctx context.Context, c catalog.Command) (catalog.Result, error)
}

// OpenFunc opens (creating sparse or growing to size) a backing file.
type OpenFunc func(path string, size int64, blockSize int) (blockdev.Backend, error)

// Options configure a Reconciler.
type Options struct {
	NodeID string
	// VolumeDir holds the backing files (catalog Volume.Path is relative
	// to it). Created if missing.
	VolumeDir string
	Target    Target
	Catalog   Catalog
	Proposer  Proposer
	// Metrics, when set, meters every volume's I/O.
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Resync is the period of passes without catalogue changes, which
	// retry failed steps (0 = 30 s).
	Resync time.Duration
	// Open opens backing files (nil = blockdev/file.Open).
	Open OpenFunc
	// OpenLeg reaches a remote copy of a replicated volume this node
	// owns (nil: this node cannot own replicated volumes; they go to
	// state error here).
	OpenLeg LegOpener
	// RebuildBytesPerSecond limits each rebuild's copy rate (0 =
	// DefaultRebuildBytesPerSecond, negative = unlimited).
	RebuildBytesPerSecond int64
}

// DefaultRebuildBytesPerSecond is the rebuild rate limit when
// Options.RebuildBytesPerSecond is 0: enough to rebuild 100 GiB in under
// ten minutes, little enough to leave a 10 Gb/s link to host I/O.
const DefaultRebuildBytesPerSecond = 200 << 20

// Roles of this node for a volume.
const (
	roleSingle  = "single"  // the only copy: today's fast path, no mirror
	roleOwner   = "owner"   // owner of a replicated volume: a mirror
	roleReplica = "replica" // a copy the owner writes through ReplicaNQN
)

type openVol struct {
	vb    *volumeBackend
	size  int64
	path  string
	uuid  [16]byte
	nguid [16]byte
	// role is this node's role (role*) the volume was opened for, epoch
	// the ownership epoch; own is the owner's mirror stack (roleOwner).
	role  string
	epoch uint64
	own   *ownerVol
}

// replicaSub is a replica subsystem (catalog.ReplicaNQN) this node
// serves: the host it admits (the owner at its epoch) and the volume.
type replicaSub struct {
	host, vol string
}

// proposal is a volume state this node proposed and the catalogue index
// it had read then: until the catalogue moves on, the proposal is in
// flight (committed on the leader, not yet applied here) and is not
// repeated. Once the index moves and the state still differs (an admin's
// repair, say), it is proposed again.
type proposal struct {
	want  string
	index uint64
}

type nsKey struct {
	nqn  string
	nsid uint32
}

// Reconciler drives the target towards the catalogue.
type Reconciler struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex // serialises passes; guards everything below
	vols    map[string]*openVol
	subs    map[string]bool       // subsystems this reconciler added
	ns      map[nsKey]string      // namespaces it attached → volume
	rsubs   map[string]replicaSub // replica subsystems it serves
	here    map[string]bool       // volumes with a copy here, as the pass read them
	pending map[string]proposal   // volume → state last proposed
	// identical: volume → the epoch at which this process closed its
	// owner stack with the copies known identical (resync.go); a stack
	// rebuilt at that epoch (a resize) needs no resync.
	identical map[string]uint64
	discFP    string

	kick    chan struct{} // Kick: run a pass soon
	legWait time.Duration // legOpenWait (tests shorten it)
}

// New returns a Reconciler; nothing happens until Run or Sync.
func New(o Options) *Reconciler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Resync == 0 {
		o.Resync = 30 * time.Second
	}
	switch {
	case o.RebuildBytesPerSecond == 0:
		o.RebuildBytesPerSecond = DefaultRebuildBytesPerSecond
	case o.RebuildBytesPerSecond < 0:
		o.RebuildBytesPerSecond = 0
	}
	if o.Open == nil {
		o.Open = func(path string, size int64, bs int) (blockdev.Backend, error) {
			return file.Open(path, file.Options{Size: size, BlockSize: bs})
		}
	}
	return &Reconciler{
		o: o, log: o.Logger.With("component", "reconcile"),
		vols: map[string]*openVol{}, subs: map[string]bool{}, ns: map[nsKey]string{}, pending: map[string]proposal{},
		identical: map[string]uint64{},
		rsubs:     map[string]replicaSub{}, kick: make(chan struct{}, 1), legWait: legOpenWait,
	}
}

// Kick asks Run for a pass soon (a replica fault refused, a rebuild
// ended). Any goroutine; never blocks.
func (r *Reconciler) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run runs a pass after every catalogue change and every Resync, until
// ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	ch, cancel := r.o.Catalog.Watch()
	defer cancel()
	t := time.NewTicker(r.o.Resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
		case <-r.kick:
		case <-t.C:
		}
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reconcile pass incomplete; retrying later", "err", err)
		}
	}
}

// desired is the part of the catalogue that concerns this node.
type desired struct {
	vols       map[string]catalog.Volume // with a copy here (owned or not), not deleted
	tombstones []catalog.Volume          // with a copy here, deleted
	subs       map[string]catalog.Subsystem
	nodes      map[string]catalog.Node
	remoteFP   string
	index      uint64 // catalogue index read
}

// roleOf is this node's role for v ("" when it holds no copy).
func (r *Reconciler) roleOf(v catalog.Volume) string {
	rs := v.ReplicaList()
	switch {
	case len(rs) < 2 && v.Node == r.o.NodeID:
		return roleSingle
	case len(rs) < 2:
		return ""
	case v.Node == r.o.NodeID:
		return roleOwner
	case v.HasReplicaOn(r.o.NodeID):
		return roleReplica
	}
	return ""
}

func (r *Reconciler) desired() desired {
	d := desired{vols: map[string]catalog.Volume{}, subs: map[string]catalog.Subsystem{}, nodes: map[string]catalog.Node{}}
	r.o.Catalog.View(func(st *catalog.State) {
		for _, v := range st.Volumes {
			switch {
			case v.State == catalog.VolumeDeleting:
				// Every node with a copy purges it; as copies go, the
				// last one may be on a node other than v.Node.
				if v.HasReplicaOn(r.o.NodeID) {
					d.tombstones = append(d.tombstones, v.Clone())
				}
			case r.roleOf(v) != "":
				d.vols[v.Name] = v.Clone()
			}
		}
		for nqn, s := range st.Subsystems {
			if slices.Contains(st.SubsystemNodes(nqn), r.o.NodeID) {
				d.subs[nqn] = s.Clone()
			}
		}
		for id, n := range st.Nodes {
			n.Listeners = slices.Clone(n.Listeners)
			d.nodes[id] = n
		}
		d.remoteFP = remoteFingerprint(st, r.o.NodeID)
		d.index = st.Index
	})
	return d
}

// Sync runs one pass. It returns the errors of the steps that failed
// (each is retried by the next pass).
func (r *Reconciler) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.desired()
	var errs []error
	resized := map[string]bool{}
	r.here = map[string]bool{}
	for name := range d.vols {
		r.here[name] = true
	}

	// 0. Fences first: replica subsystems admitting a deposed owner, and
	// stacks built for another role or epoch (restack.go): one attached
	// to export namespaces is retired (its paths inaccessible unless
	// they serve through the change) and rebuilt under them in step 1;
	// any other is taken down.
	errs = append(errs, r.fenceReplicas(d))
	retired := map[string]*openVol{}
	for name, ov := range r.vols {
		v, ok := d.vols[name]
		if !ok {
			continue // no copy here any more: closed below once detached
		}
		role := r.roleOf(v)
		if ov.role != role || (role == roleOwner && (ov.epoch != v.OwnerEpoch() || ov.size != v.Size)) {
			if ov.own != nil && ov.epoch != v.OwnerEpoch() {
				// Deposed: its fault records would be refused (stale
				// epoch); the mirror's Close need not propose them.
				ov.own.memb.deposed.Store(true)
			}
			if r.attached(name) {
				errs = append(errs, r.retire(name, ov, keepsServing(ov, role, v)))
				retired[name] = ov
				continue
			}
			errs = append(errs, r.teardown(name, ov))
		}
	}

	// 1. Open or grow this node's copies; a retired stack's namespaces
	// move to the new one.
	for _, v := range d.vols {
		role := r.roleOf(v)
		err := r.ensureVolume(ctx, v, role, d.nodes, resized, retired[v.Name])
		if err != nil {
			errs = append(errs, err)
		}
		if role == roleReplica {
			if err == nil {
				if err := r.ensureReplicaSubsystem(v); err != nil {
					errs = append(errs, err)
				}
			}
			continue // the owner reports the volume's state
		}
		state, msg := catalog.VolumeOnline, ""
		if err != nil {
			state, msg = catalog.VolumeError, err.Error()
		}
		if v.State != state || v.Message != msg {
			p := proposal{want: state + "\x00" + msg, index: d.index}
			if r.pending[v.Name] != p {
				c := catalog.Command{Op: catalog.OpSetVolumeState, Name: v.Name, State: state, Message: msg}
				if role == roleOwner {
					c.Epoch = v.OwnerEpoch()
				}
				if _, err := r.o.Proposer.Propose(ctx, c); err != nil {
					errs = append(errs, fmt.Errorf("report volume %s %s: %w", v.Name, state, err))
				} else {
					r.pending[v.Name] = p
				}
			}
		} else {
			delete(r.pending, v.Name)
		}
	}

	// 2. Subsystems served here.
	for _, s := range d.subs {
		if err := r.ensureSubsystem(s, resized); err != nil {
			errs = append(errs, err)
		}
	}

	// 3. Subsystems that went away (or moved to another node).
	for nqn := range r.subs {
		if _, ok := d.subs[nqn]; ok {
			continue
		}
		if err := r.o.Target.RemoveSubsystem(nqn); err != nil && !errors.Is(err, target.ErrNoSubsystem) {
			errs = append(errs, fmt.Errorf("remove subsystem %s: %w", nqn, err))
			continue
		}
		for k, vol := range r.ns {
			if k.nqn == nqn {
				r.unrecordNS(k, vol)
			}
		}
		delete(r.subs, nqn)
		r.log.Info("subsystem removed", "nqn", nqn)
	}

	// Volumes still attached somewhere may not be closed.
	attached := map[string]bool{}
	for _, vol := range r.ns {
		attached[vol] = true
	}
	for name, ov := range r.vols {
		if _, ok := d.vols[name]; ok || attached[name] {
			continue
		}
		if err := r.closeVol(ov); err != nil {
			r.log.Warn("closing volume", "volume", name, "err", err)
		}
		delete(r.vols, name)
		delete(r.pending, name)
		if r.o.Metrics != nil {
			r.o.Metrics.ForgetVolume(name)
		}
		r.log.Info("volume closed", "volume", name)
	}

	// 4. Deleted volumes: remove the data, then forget the tombstone.
	for _, v := range d.tombstones {
		if _, open := r.vols[v.Name]; open {
			continue // still attached; next pass
		}
		p, err := r.removeData(v, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete volume %s data: %w", v.Name, err))
			continue
		}
		purge := catalog.Command{Op: catalog.OpPurgeVolume, Name: v.Name}
		if len(v.ReplicaList()) > 1 {
			purge.NodeID = r.o.NodeID // this copy is gone; the name goes with the last
		}
		if _, err := r.o.Proposer.Propose(ctx, purge); err != nil {
			errs = append(errs, fmt.Errorf("purge volume %s: %w", v.Name, err))
			continue
		}
		r.log.Info("volume deleted", "volume", v.Name, "path", p)
	}

	// 5. Subsystems elsewhere changed: tell discovery controllers.
	if d.remoteFP != r.discFP {
		r.discFP = d.remoteFP
		r.o.Target.NotifyDiscoveryChanged()
	}
	return errors.Join(errs...)
}

// path returns the backing file of v: a canonical file name
// (catalog.ValidVolumePath) joined to the volume directory, which must not
// be a symlink itself (Lstat: a link would let one name reach another's
// file).
func (r *Reconciler) path(v catalog.Volume) (string, error) {
	name := localPath(v, r.o.NodeID)
	if !catalog.ValidVolumePath(name) {
		return "", fmt.Errorf("volume %s: path %q is not a plain file name in the volume directory", v.Name, name)
	}
	p := filepath.Join(r.o.VolumeDir, name)
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("volume %s: %s is a symlink; refusing to follow it", v.Name, p)
	}
	return p, nil
}

// removeData removes a deleted volume's backing file, but only a file that
// the catalogue says belongs to this volume alone: no other volume of this
// node names it (in any spelling an older catalogue may hold) and it is
// not the same file (a hard link) as one this node has open.
func (r *Reconciler) removeData(v catalog.Volume, d desired) (string, error) {
	p, err := r.path(v)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return "", err
	}
	clean := filepath.Clean(p)
	for _, o := range d.vols {
		if filepath.Clean(filepath.Join(r.o.VolumeDir, localPath(o, r.o.NodeID))) == clean {
			return "", fmt.Errorf("%s is also volume %s's backing file; not removing it", p, o.Name)
		}
	}
	for name, ov := range r.vols {
		if ofi, err := os.Stat(ov.path); err == nil && os.SameFile(fi, ofi) {
			return "", fmt.Errorf("%s is the same file as open volume %s's %s; not removing it", p, name, ov.path)
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	return p, nil
}

func parseID(h string) [16]byte {
	var id [16]byte
	hex.Decode(id[:], []byte(h))
	return id
}

// ensureVolume opens v's backing file (this node's copy) for role, or
// grows it; as owner of a replicated volume it builds the mirror over it
// or brings the mirror's legs to the catalogue. old, when not nil, is
// the volume's retired stack (restack.go): the new one takes its place
// under its namespaces and old is closed; if the new one cannot be
// opened, old is taken down (teardown).
func (r *Reconciler) ensureVolume(ctx context.Context, v catalog.Volume, role string, nodes map[string]catalog.Node, resized map[string]bool, old *openVol) error {
	if old == nil {
		return r.openVolume(ctx, v, role, nodes, resized, nil)
	}
	err := r.openVolume(ctx, v, role, nodes, resized, old)
	if err != nil {
		r.vols[v.Name] = old // teardown takes it out once detached
		if terr := r.teardown(v.Name, old); terr != nil {
			err = errors.Join(err, terr)
		}
	}
	return err
}

// openVolume is ensureVolume's work; with old set, r.vols has no stack
// for v and a successful open swaps the new one in under old's
// namespaces.
func (r *Reconciler) openVolume(ctx context.Context, v catalog.Volume, role string, nodes map[string]catalog.Node, resized map[string]bool, old *openVol) error {
	ov := r.vols[v.Name]
	if ov != nil && ov.size >= v.Size {
		if ov.own != nil {
			return r.ensureLegs(ctx, ov.own, v, nodes)
		}
		return nil
	}
	p, err := r.path(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.o.VolumeDir, 0o750); err != nil {
		return fmt.Errorf("volume %s: %w", v.Name, err)
	}
	if fi, err := os.Stat(p); err == nil {
		for name, o := range r.vols {
			if ofi, err := os.Stat(o.path); name != v.Name && err == nil && os.SameFile(fi, ofi) {
				return fmt.Errorf("volume %s: %s is the same file as volume %s's %s", v.Name, p, name, o.path)
			}
		}
	}
	b, err := r.o.Open(p, v.Size, v.BlockSize)
	if err != nil {
		return fmt.Errorf("volume %s: open %s: %w", v.Name, p, err)
	}
	if b.BlockSize() != v.BlockSize || int64(b.Blocks())*int64(v.BlockSize) < v.Size {
		b.Close()
		return fmt.Errorf("volume %s: %s opened with %d blocks of %d bytes, want %d bytes of %d", v.Name, p,
			b.Blocks(), b.BlockSize(), v.Size, v.BlockSize)
	}
	if ov == nil {
		var m *metrics.VolumeMeter
		if r.o.Metrics != nil {
			m = r.o.Metrics.Volume(v.Name)
		}
		nv := &openVol{size: v.Size, path: p, uuid: parseID(v.UUID), nguid: parseID(v.NGUID), role: role, epoch: v.OwnerEpoch()}
		if role == roleOwner {
			own, err := r.buildOwner(ctx, v, b, nodes)
			if err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
			nv.own = own
			b = own.m.Backend()
		}
		nv.vb = newVolumeBackend(b, m)
		r.vols[v.Name] = nv
		r.log.Info("volume opened", "volume", v.Name, "path", p, "bytes", v.Size, "role", role, "epoch", nv.epoch)
		if old != nil {
			r.swapStack(v.Name, old, nv)
		}
		if nv.own != nil {
			// After the old stack closed: closing it recorded whether
			// it left the copies identical (resync.go).
			r.resyncIfNeeded(v, nv.own)
		}
		return nil
	}
	if err := ov.vb.swap(b); err != nil {
		return fmt.Errorf("volume %s: grow to %d bytes: %w", v.Name, v.Size, err)
	}
	r.log.Info("volume resized", "volume", v.Name, "from", ov.size, "to", v.Size)
	ov.size = v.Size
	resized[v.Name] = true
	return nil
}

func (r *Reconciler) recordNS(k nsKey, vol string) {
	r.ns[k] = vol
	if r.o.Metrics != nil {
		r.o.Metrics.SetNamespace(k.nqn, k.nsid, vol, true)
	}
}

func (r *Reconciler) unrecordNS(k nsKey, vol string) {
	delete(r.ns, k)
	if r.o.Metrics != nil {
		r.o.Metrics.SetNamespace(k.nqn, k.nsid, vol, false)
	}
}

// ensureSubsystem brings one subsystem of this node to the catalogue's
// values.
func (r *Reconciler) ensureSubsystem(s catalog.Subsystem, resized map[string]bool) error {
	ts, ok := r.o.Target.Subsystem(s.NQN)
	if ok && !r.subs[s.NQN] {
		return fmt.Errorf("subsystem %s: already in the target and not managed by the cluster (static config?)", s.NQN)
	}
	if !ok {
		var err error
		ts, err = r.o.Target.AddSubsystem(target.SubsystemConfig{
			NQN: s.NQN, Serial: s.Serial, Model: s.Model, AllowAnyHost: s.AllowAnyHost, Hosts: s.Hosts,
		})
		if err != nil {
			return fmt.Errorf("add subsystem %s: %w", s.NQN, err)
		}
		r.subs[s.NQN] = true
		for k, vol := range r.ns { // stale records of an earlier incarnation
			if k.nqn == s.NQN {
				r.unrecordNS(k, vol)
			}
		}
		r.log.Info("subsystem added", "nqn", s.NQN, "allow_any_host", s.AllowAnyHost, "hosts", len(s.Hosts))
	}
	var errs []error
	if ts.AllowAnyHost() != s.AllowAnyHost {
		ts.SetAllowAnyHost(s.AllowAnyHost)
	}
	have := ts.Hosts()
	for _, h := range s.Hosts {
		if !slices.Contains(have, h) {
			if err := ts.AddHost(h); err != nil && !errors.Is(err, target.ErrHostExists) {
				errs = append(errs, fmt.Errorf("subsystem %s: add host %s: %w", s.NQN, h, err))
			}
		}
	}
	for _, h := range have {
		if !slices.Contains(s.Hosts, h) {
			if err := ts.RemoveHost(h); err != nil && !errors.Is(err, target.ErrNoHost) {
				errs = append(errs, fmt.Errorf("subsystem %s: remove host %s: %w", s.NQN, h, err))
			}
		}
	}
	// A path that is not to serve turns so before its namespaces change
	// (a deposed owner's), one that is to serve only after.
	if st, err := r.anaFor(s); err == nil && st != nvme.ANAStateOptimized && st != nvme.ANAStateNonOptimized {
		if err := r.ensureANA(s, ts); err != nil {
			errs = append(errs, err)
		}
	}
	// Namespaces: detach what is gone or changed, then attach.
	for _, nsid := range ts.Namespaces() {
		k := nsKey{s.NQN, nsid}
		cur := r.ns[k]
		if want, ok := s.Namespaces[nsid]; ok && want == cur {
			continue
		}
		if err := ts.RemoveNamespace(nsid); err != nil && !errors.Is(err, target.ErrNoNamespace) {
			errs = append(errs, fmt.Errorf("subsystem %s: remove nsid %d: %w", s.NQN, nsid, err))
			continue
		}
		r.unrecordNS(k, cur)
	}
	for nsid, vol := range s.Namespaces {
		k := nsKey{s.NQN, nsid}
		if r.ns[k] == vol {
			if resized[vol] {
				ts.NotifyNamespaceChanged(nsid)
			}
			continue
		}
		ov := r.vols[vol]
		if ov == nil {
			if !r.hasCopy(vol) {
				continue // served here for another volume's copy; this one has none here
			}
			errs = append(errs, fmt.Errorf("subsystem %s nsid %d: volume %s is not open", s.NQN, nsid, vol))
			continue
		}
		err := ts.AddNamespace(target.NamespaceConfig{NSID: nsid, Backend: ov.vb, UUID: ov.uuid, NGUID: ov.nguid})
		if err != nil {
			errs = append(errs, fmt.Errorf("subsystem %s: add nsid %d (%s): %w", s.NQN, nsid, vol, err))
			continue
		}
		r.recordNS(k, vol)
	}
	if err := r.ensureANA(s, ts); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Close closes every backend the reconciler opened. Call it after the
// target was closed (or no longer uses them).
func (r *Reconciler) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, ov := range r.vols {
		if ov.own != nil {
			ov.own.memb.shutdown.Store(true)
		}
	}
	for name, ov := range r.vols {
		errs = append(errs, r.closeVol(ov))
		delete(r.vols, name)
	}
	return errors.Join(errs...)
}
