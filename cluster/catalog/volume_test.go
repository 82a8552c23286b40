package catalog

import (
	"errors"
	"strings"
	"testing"
)

func withNode(t *testing.T, fsBytes int64) *State {
	t.Helper()
	s := New()
	for _, id := range []string{"n1", "n2"} {
		if _, err := s.Apply(Command{V: CommandVersion, Op: OpRegisterNode,
			Node: &Node{ID: id, APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2", VolumeFSBytes: fsBytes}}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func create(s *State, v *Volume) error {
	_, err := s.Apply(Command{V: CommandVersion, Op: OpCreateVolume, Volume: v})
	return err
}

// TestVolumePathAliases: a path that names another volume's file in any
// spelling (./x, x/../x, a directory, an absolute path) is refused; only
// the canonical name.img is accepted, and only once per node.
func TestVolumePathAliases(t *testing.T) {
	s := withNode(t, 0)
	if err := create(s, vol("victim", "n1", 1<<20)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"./victim.img", "victim.img/", "x/../victim.img", "/victim.img", "sub/victim.img",
		"../victim.img", "victim", ".img", "", ".victim.img", "victim.img\x00"} {
		v := vol("alias", "n1", 1<<20)
		v.Path = p
		if err := create(s, v); !errors.Is(err, ErrInvalid) {
			t.Errorf("path %q: %v, want ErrInvalid", p, err)
		}
	}
	v := vol("alias", "n1", 1<<20)
	v.Path = "victim.img"
	if err := create(s, v); !errors.Is(err, ErrConflict) {
		t.Errorf("same path: %v, want ErrConflict", err)
	}
	v.Node = "n2" // another node's directory: no clash
	if err := create(s, v); err != nil {
		t.Errorf("same file name on another node: %v", err)
	}
}

// TestVolumeIDsUnique: a UUID or NGUID that another volume has (in either
// role, any case) is refused: hosts merge namespaces by these IDs.
func TestVolumeIDsUnique(t *testing.T) {
	s := withNode(t, 0)
	a := vol("a", "n1", 1<<20)
	if err := create(s, a); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(v *Volume){
		"same uuid":          func(v *Volume) { v.UUID = a.UUID },
		"same nguid":         func(v *Volume) { v.NGUID = a.NGUID },
		"uuid = other nguid": func(v *Volume) { v.UUID = a.NGUID },
		"upper-case nguid":   func(v *Volume) { v.NGUID = strings.ToUpper(a.NGUID) },
	} {
		v := vol("b", "n2", 1<<20)
		mut(v)
		if err := create(s, v); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
}

// TestCreateIdempotent: a create retried with the same request ID answers
// the volume (or subsystem) the first attempt made, even though the retry
// carries fresh UUIDs; another request ID, or none, gets "exists".
func TestCreateIdempotent(t *testing.T) {
	s := withNode(t, 0)
	v := vol("v", "n1", 1<<20)
	v.RequestID = "req-1"
	if err := create(s, v); err != nil {
		t.Fatal(err)
	}
	retry := vol("v", "n1", 1<<20)
	retry.UUID, retry.NGUID, retry.RequestID = hexID("other-u"), hexID("other-g"), "req-1"
	if _, err := s.Apply(Command{V: CommandVersion, Op: OpSetVolumeState, Name: "v", State: VolumeOnline}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Apply(Command{V: CommandVersion, Op: OpCreateVolume, Volume: retry})
	if err != nil || res.Volume.UUID != v.UUID || res.Volume.State != VolumeCreating {
		t.Fatalf("retry: %+v %v (want the first answer: same UUID, state creating)", res.Volume, err)
	}
	if s.Volumes["v"].State != VolumeOnline {
		t.Fatalf("a replayed create changed the volume: %+v", s.Volumes["v"])
	}
	other := *retry
	other.Node = "n2"
	if err := create(s, &other); !errors.Is(err, ErrConflict) {
		t.Fatalf("request id reused for another spec: %v", err)
	}
	for _, id := range []string{"req-2", ""} {
		o := vol("v", "n1", 1<<20)
		o.RequestID = id
		if err := create(s, o); !errors.Is(err, ErrExists) {
			t.Errorf("request id %q: %v, want ErrExists", id, err)
		}
	}
	sub := &Subsystem{NQN: nqnA, Node: "n1", RequestID: "req-3"}
	for i := range 2 {
		if _, err := s.Apply(Command{V: CommandVersion, Op: OpCreateSubsystem, Subsystem: sub}); err != nil {
			t.Fatalf("subsystem create %d: %v", i, err)
		}
	}
	sub.RequestID = "req-4"
	if _, err := s.Apply(Command{V: CommandVersion, Op: OpCreateSubsystem, Subsystem: sub}); !errors.Is(err, ErrExists) {
		t.Fatalf("other subsystem request: %v", err)
	}
}

// TestNewVolume: defaults, limits, the derived path, and messages that
// name the rule.
func TestNewVolume(t *testing.T) {
	u, g := hexID("u"), hexID("g")
	v, err := NewVolume(VolumeSpec{Name: "data", Size: 1 << 20, Node: "n1"}, u, g)
	if err != nil || v.BlockSize != DefaultBlockSize || v.Path != "data.img" {
		t.Fatalf("%+v %v", v, err)
	}
	for _, c := range []struct {
		spec VolumeSpec
		want string
	}{
		{VolumeSpec{Name: "x", Node: "n1"}, "size is required"},
		{VolumeSpec{Name: "bad/name", Size: 4096, Node: "n1"}, NamePattern},
		{VolumeSpec{Name: "x", Size: 1000, Node: "n1"}, "multiple of the block size"},
		{VolumeSpec{Name: "x", Size: 4096, BlockSize: 1024, Node: "n1"}, "want 512 or 4096"},
		{VolumeSpec{Name: "x", Size: 1<<62 - 4096, Node: "n1"}, "1 EiB"},
	} {
		if _, err := NewVolume(c.spec, u, g); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
}

// TestCreateLargerThanFilesystem: a size the owner's volume filesystem can
// never hold is refused at create.
func TestCreateLargerThanFilesystem(t *testing.T) {
	s := withNode(t, 1<<30)
	if err := create(s, vol("big", "n1", 1<<50)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "holds only") {
		t.Fatalf("1 PiB on a 1 GiB filesystem: %v", err)
	}
	if err := create(s, vol("fits", "n1", 1<<29)); err != nil {
		t.Fatal(err)
	}
}
