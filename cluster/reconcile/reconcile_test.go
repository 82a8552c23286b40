package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/target"
)

// leader is a catalogue and the leader that applies to it: it is the
// reconciler's Catalog and Proposer at once.
type leader struct {
	mu       sync.Mutex
	st       *catalog.State
	proposed []catalog.Command
}

func (l *leader) View(fn func(*catalog.State)) { l.mu.Lock(); defer l.mu.Unlock(); fn(l.st) }
func (l *leader) Watch() (<-chan struct{}, func()) {
	return make(chan struct{}), func() {}
}
func (l *leader) Propose(_ context.Context, c catalog.Command) (catalog.Result, error) {
	c.V = catalog.CommandVersion
	l.mu.Lock()
	defer l.mu.Unlock()
	l.proposed = append(l.proposed, c)
	l.st.Index++
	return l.st.Apply(c)
}

// apply changes the catalogue as an admin would; a rejection fails t.
func (l *leader) apply(t *testing.T, c catalog.Command) {
	t.Helper()
	c.V = catalog.CommandVersion
	l.mu.Lock()
	defer l.mu.Unlock()
	l.st.Index++
	if _, err := l.st.Apply(c); err != nil {
		t.Fatalf("%s: %v", c.Op, err)
	}
}

func (l *leader) volume(name string) catalog.Volume {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st.Volumes[name]
}

const nqn = "nqn.2026-11.io.rdmablk:rec"

func hexID(s string) string { return (fmt.Sprintf("%x", s) + strings.Repeat("0", 32))[:32] }

func volCmd(name string, size int64) catalog.Command {
	v, err := catalog.NewVolume(catalog.VolumeSpec{Name: name, Size: size, Node: "n1"}, hexID("u"+name), hexID("g"+name))
	if err != nil {
		panic(err)
	}
	return catalog.Command{Op: catalog.OpCreateVolume, Volume: &v}
}

// rig is a reconciler for node n1 over a real target and memory
// backends; failOpen makes opening the named volumes fail.
type rig struct {
	l        *leader
	tgt      *target.Target
	r        *Reconciler
	dir      string
	mu       sync.Mutex
	failOpen map[string]bool
}

func newRig(t *testing.T) *rig {
	t.Helper()
	g := &rig{l: &leader{st: catalog.New()}, dir: t.TempDir(), failOpen: map[string]bool{}}
	g.l.apply(t, catalog.Command{Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: "n1", APIAddr: "a:1", RaftAddr: "a:2"}})
	g.l.apply(t, catalog.Command{Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: "n2", APIAddr: "b:1", RaftAddr: "b:2"}})
	g.tgt = target.New(target.Options{Workers: 1, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { g.tgt.Close() })
	g.r = New(Options{NodeID: "n1", VolumeDir: g.dir, Target: g.tgt, Catalog: g.l, Proposer: g.l, Logger: slog.New(slog.DiscardHandler),
		Open: func(path string, size int64, bs int) (blockdev.Backend, error) {
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.failOpen[filepath.Base(path)] {
				return nil, errors.New("injected open failure")
			}
			return mem.New(uint64(size)/uint64(bs), bs), nil
		}})
	t.Cleanup(func() { g.r.Close() })
	return g
}

func (g *rig) sync(t *testing.T) error {
	t.Helper()
	return g.r.Sync(context.Background())
}

// TestSync: catalogue states against what the target ends up with.
func TestSync(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, g *rig)
		check func(t *testing.T, g *rig)
	}{
		{"volume exported with hosts", func(t *testing.T, g *rig) {
			g.l.apply(t, volCmd("v1", 1<<20))
			g.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: nqn, Node: "n1",
				Hosts: []string{"nqn.2026-11.io.example:h1"}}})
			g.l.apply(t, catalog.Command{Op: catalog.OpAddNamespace, NQN: nqn, Name: "v1"})
		}, func(t *testing.T, g *rig) {
			ts, ok := g.tgt.Subsystem(nqn)
			if !ok || !slices.Equal(ts.Namespaces(), []uint32{1}) || !slices.Equal(ts.Hosts(), []string{"nqn.2026-11.io.example:h1"}) || ts.AllowAnyHost() {
				t.Fatalf("target subsystem: %v %v", ok, ts)
			}
			if v := g.l.volume("v1"); v.State != catalog.VolumeOnline {
				t.Fatalf("volume %+v", v)
			}
		}},
		{"other node's objects untouched", func(t *testing.T, g *rig) {
			c := volCmd("v2", 1<<20)
			c.Volume.Node = "n2"
			g.l.apply(t, c)
			g.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: nqn, Node: "n2"}})
		}, func(t *testing.T, g *rig) {
			if _, ok := g.tgt.Subsystem(nqn); ok {
				t.Fatal("n2's subsystem in n1's target")
			}
			if v := g.l.volume("v2"); v.State != catalog.VolumeCreating || len(g.l.proposed) != 0 {
				t.Fatalf("n1 reported n2's volume: %+v %v", v, g.l.proposed)
			}
		}},
		{"static subsystem is not adopted", func(t *testing.T, g *rig) {
			if _, err := g.tgt.AddSubsystem(target.SubsystemConfig{NQN: nqn, AllowAnyHost: true}); err != nil {
				t.Fatal(err)
			}
			g.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: nqn, Node: "n1"}})
		}, func(t *testing.T, g *rig) {
			if err := g.sync(t); err == nil || !strings.Contains(err.Error(), "not managed by the cluster") {
				t.Fatalf("sync: %v", err)
			}
			if ts, _ := g.tgt.Subsystem(nqn); !ts.AllowAnyHost() {
				t.Fatal("static subsystem changed")
			}
		}},
		{"subsystem deleted from the catalogue leaves the target", func(t *testing.T, g *rig) {
			g.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: nqn, Node: "n1"}})
			if err := g.sync(t); err != nil {
				t.Fatal(err)
			}
			g.l.apply(t, catalog.Command{Op: catalog.OpDeleteSubsystem, NQN: nqn})
		}, func(t *testing.T, g *rig) {
			if _, ok := g.tgt.Subsystem(nqn); ok {
				t.Fatal("subsystem still in the target")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t)
			tc.setup(t, g)
			g.sync(t)
			tc.check(t, g)
		})
	}
}

// TestSyncErrorAndRepair: a volume that fails to open is reported in
// error with the cause; a repair clears it and, failing again, it is
// reported again (not left "creating"); once the cause is gone a repair
// brings it online.
func TestSyncErrorAndRepair(t *testing.T) {
	g := newRig(t)
	g.failOpen["v.img"] = true
	g.l.apply(t, volCmd("v", 1<<20))
	if err := g.sync(t); err == nil {
		t.Fatal("sync hid the open failure")
	}
	if v := g.l.volume("v"); v.State != catalog.VolumeError || !strings.Contains(v.Message, "injected open failure") {
		t.Fatalf("after failed open: %+v", v)
	}
	g.l.apply(t, catalog.Command{Op: catalog.OpRepairVolume, Name: "v"})
	g.sync(t)
	if v := g.l.volume("v"); v.State != catalog.VolumeError {
		t.Fatalf("repair with the cause still there: %+v, want error again", v)
	}
	g.mu.Lock()
	g.failOpen["v.img"] = false
	g.mu.Unlock()
	g.l.apply(t, catalog.Command{Op: catalog.OpRepairVolume, Name: "v"})
	if err := g.sync(t); err != nil {
		t.Fatal(err)
	}
	if v := g.l.volume("v"); v.State != catalog.VolumeOnline {
		t.Fatalf("after repair: %+v", v)
	}
}

// TestSyncDeleteOnlyOwnFile: a tombstone's file is removed and the
// volume purged; a file that is the same as an open volume's (a hard
// link) or a symlink is never removed through a deleted volume.
func TestSyncDeleteOnlyOwnFile(t *testing.T) {
	g := newRig(t)
	g.l.apply(t, volCmd("keep", 1<<20))
	g.l.apply(t, volCmd("gone", 1<<20))
	g.l.apply(t, volCmd("link", 1<<20))
	if err := g.sync(t); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(g.dir, "keep.img")
	if err := os.WriteFile(keep, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.r.vols["keep"].path = keep // the mem backend has no file; point at the real one
	if err := os.WriteFile(filepath.Join(g.dir, "gone.img"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(keep, filepath.Join(g.dir, "link.img")); err != nil {
		t.Fatal(err)
	}
	g.l.apply(t, catalog.Command{Op: catalog.OpDeleteVolume, Name: "gone"})
	g.l.apply(t, catalog.Command{Op: catalog.OpDeleteVolume, Name: "link"})
	err := g.sync(t)
	if err == nil || !strings.Contains(err.Error(), "same file as open volume keep") {
		t.Fatalf("sync: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.dir, "gone.img")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("gone.img: %v", err)
	}
	if _, ok := g.l.st.Volumes["gone"]; ok {
		t.Fatal("gone not purged")
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "precious" {
		t.Fatalf("keep: %q %v", b, err)
	}
	if _, ok := g.l.st.Volumes["link"]; !ok {
		t.Fatal("link purged although its file was kept")
	}

	// A symlink in a volume's place is refused, never followed.
	if err := os.Symlink(keep, filepath.Join(g.dir, "sym.img")); err != nil {
		t.Fatal(err)
	}
	g.l.apply(t, volCmd("sym", 1<<20))
	if err := g.sync(t); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlinked volume: %v", err)
	}
}
