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
}

type openVol struct {
	vb    *volumeBackend
	size  int64
	path  string
	uuid  [16]byte
	nguid [16]byte
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
	subs    map[string]bool     // subsystems this reconciler added
	ns      map[nsKey]string    // namespaces it attached → volume
	pending map[string]proposal // volume → state last proposed
	discFP  string
}

// New returns a Reconciler; nothing happens until Run or Sync.
func New(o Options) *Reconciler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Resync == 0 {
		o.Resync = 30 * time.Second
	}
	if o.Open == nil {
		o.Open = func(path string, size int64, bs int) (blockdev.Backend, error) {
			return file.Open(path, file.Options{Size: size, BlockSize: bs})
		}
	}
	return &Reconciler{
		o: o, log: o.Logger.With("component", "reconcile"),
		vols: map[string]*openVol{}, subs: map[string]bool{}, ns: map[nsKey]string{}, pending: map[string]proposal{},
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
		case <-t.C:
		}
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reconcile pass incomplete; retrying later", "err", err)
		}
	}
}

// desired is the part of the catalogue that concerns this node.
type desired struct {
	vols       map[string]catalog.Volume // owned here, not deleted
	tombstones []catalog.Volume          // owned here, deleted
	subs       map[string]catalog.Subsystem
	remoteFP   string
	index      uint64 // catalogue index read
}

func (r *Reconciler) desired() desired {
	d := desired{vols: map[string]catalog.Volume{}, subs: map[string]catalog.Subsystem{}}
	r.o.Catalog.View(func(st *catalog.State) {
		for _, v := range st.Volumes {
			if v.Node != r.o.NodeID {
				continue
			}
			if v.State == catalog.VolumeDeleting {
				d.tombstones = append(d.tombstones, v)
			} else {
				d.vols[v.Name] = v
			}
		}
		for nqn, s := range st.Subsystems {
			if s.Node == r.o.NodeID {
				d.subs[nqn] = s.Clone()
			}
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

	// 1. Open or grow this node's volumes.
	for _, v := range d.vols {
		state, msg := catalog.VolumeOnline, ""
		if err := r.ensureVolume(v, resized); err != nil {
			errs = append(errs, err)
			state, msg = catalog.VolumeError, err.Error()
		}
		if v.State != state || v.Message != msg {
			p := proposal{want: state + "\x00" + msg, index: d.index}
			if r.pending[v.Name] != p {
				if _, err := r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpSetVolumeState, Name: v.Name, State: state, Message: msg}); err != nil {
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
		if err := ov.vb.Close(); err != nil {
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
		if _, err := r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpPurgeVolume, Name: v.Name}); err != nil {
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
	if !catalog.ValidVolumePath(v.Path) {
		return "", fmt.Errorf("volume %s: path %q is not a plain file name in the volume directory", v.Name, v.Path)
	}
	p := filepath.Join(r.o.VolumeDir, v.Path)
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
		if filepath.Clean(filepath.Join(r.o.VolumeDir, o.Path)) == clean {
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

// ensureVolume opens v's backing file, or grows it.
func (r *Reconciler) ensureVolume(v catalog.Volume, resized map[string]bool) error {
	ov := r.vols[v.Name]
	if ov != nil && ov.size >= v.Size {
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
		r.vols[v.Name] = &openVol{vb: newVolumeBackend(b, m), size: v.Size, path: p, uuid: parseID(v.UUID), nguid: parseID(v.NGUID)}
		r.log.Info("volume opened", "volume", v.Name, "path", p, "bytes", v.Size)
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
	for name, ov := range r.vols {
		errs = append(errs, ov.vb.Close())
		delete(r.vols, name)
	}
	return errors.Join(errs...)
}
