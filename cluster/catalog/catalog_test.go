package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

const (
	nqnA  = "nqn.2026-11.io.rdmablk:a"
	hostA = "nqn.2026-11.io.example:host-a"
)

// hexID returns a 32-hex-digit ID derived from s (distinct for distinct
// short s).
func hexID(s string) string {
	h := fmt.Sprintf("%x", s)
	return (h + strings.Repeat("0", 32))[:32]
}

func vol(name, node string, size int64) *Volume {
	return &Volume{Name: name, UUID: hexID("u" + name), NGUID: hexID("g" + name), Size: size, BlockSize: 512, Path: name + ".img", Node: node}
}

func cmd(op Op) Command { return Command{V: CommandVersion, Op: op} }

// script is a sequence that exercises every op; want is the error each
// step must give (nil = success).
func script() []struct {
	c    Command
	want error
} {
	n1 := &Node{ID: "n1", APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2",
		Listeners: []Listener{{PortID: 1, TrType: 1, AdrFam: 1, TrAddr: "127.0.0.1", TrSvcID: "4420"}}}
	n2 := &Node{ID: "n2", APIAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"}
	c := func(op Op, f func(*Command)) Command { x := cmd(op); f(&x); return x }
	return []struct {
		c    Command
		want error
	}{
		{c(OpRegisterNode, func(c *Command) { c.Node = n1 }), nil},
		{c(OpRegisterNode, func(c *Command) { c.Node = n2 }), nil},
		{c(OpRegisterNode, func(c *Command) { c.Node = &Node{ID: "bad id"} }), ErrInvalid},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v1", "n1", 1<<20) }), nil},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v1", "n1", 1<<20) }), ErrExists},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v2", "nX", 1<<20) }), ErrNotFound},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v2", "n1", 1000) }), ErrInvalid},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("../x", "n1", 1<<20) }), ErrInvalid},
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v2", "n2", 1<<20) }), nil},
		{c(OpSetVolumeState, func(c *Command) { c.Name, c.State = "v1", VolumeOnline }), nil},
		{c(OpResizeVolume, func(c *Command) { c.Name, c.Size = "v1", 2<<20 }), nil},
		{c(OpResizeVolume, func(c *Command) { c.Name, c.Size = "v1", 1<<20 }), ErrConflict},
		{c(OpCreateSubsystem, func(c *Command) { c.Subsystem = &Subsystem{NQN: nqnA, Node: "n1"} }), nil},
		{c(OpCreateSubsystem, func(c *Command) { c.Subsystem = &Subsystem{NQN: nqnA, Node: "n1"} }), ErrExists},
		{c(OpCreateSubsystem, func(c *Command) { c.Subsystem = &Subsystem{NQN: "bogus", Node: "n1"} }), ErrInvalid},
		{c(OpAddNamespace, func(c *Command) { c.NQN, c.Name = nqnA, "v2" }), ErrConflict}, // other node
		{c(OpAddNamespace, func(c *Command) { c.NQN, c.Name = nqnA, "v1" }), nil},
		{c(OpAddNamespace, func(c *Command) { c.NQN, c.Name = nqnA, "v1" }), nil},                    // a retry: same answer
		{c(OpAddNamespace, func(c *Command) { c.NQN, c.Name, c.NSID = nqnA, "v1", 7 }), ErrConflict}, // exported twice
		{c(OpDeleteVolume, func(c *Command) { c.Name = "v1" }), ErrConflict},
		{c(OpAddHost, func(c *Command) { c.NQN, c.Host = nqnA, hostA }), nil},
		{c(OpAddHost, func(c *Command) { c.NQN, c.Host = nqnA, hostA }), ErrExists},
		{c(OpSetAllowAnyHost, func(c *Command) { c.NQN, c.Allow = nqnA, true }), nil},
		{c(OpSetANAState, func(c *Command) { c.NQN, c.NodeID, c.State = nqnA, "n1", ANAOptimized }), nil},
		{c(OpSetANAState, func(c *Command) { c.NQN, c.NodeID, c.State = nqnA, "n1", "sleepy" }), ErrInvalid},
		{c(OpRemoveNode, func(c *Command) { c.NodeID = "n1" }), ErrConflict},
		{c(OpRemoveNamespace, func(c *Command) { c.NQN, c.NSID = nqnA, 1 }), nil},
		{c(OpRemoveNamespace, func(c *Command) { c.NQN, c.NSID = nqnA, 1 }), ErrNotFound},
		{c(OpRemoveHost, func(c *Command) { c.NQN, c.Host = nqnA, hostA }), nil},
		{c(OpDeleteVolume, func(c *Command) { c.Name = "v1" }), nil},
		{c(OpDeleteVolume, func(c *Command) { c.Name = "v1" }), nil}, // idempotent
		{c(OpCreateVolume, func(c *Command) { c.Volume = vol("v1", "n1", 1<<20) }), ErrConflict},
		{c(OpSetVolumeState, func(c *Command) { c.Name, c.State = "v1", VolumeOnline }), ErrConflict},
		{c(OpPurgeVolume, func(c *Command) { c.Name = "v2" }), ErrConflict},
		{c(OpPurgeVolume, func(c *Command) { c.Name = "v1" }), nil},
		{c(OpPurgeVolume, func(c *Command) { c.Name = "v1" }), nil},
		{c(OpDeleteSubsystem, func(c *Command) { c.NQN = nqnA }), nil},
		{c(OpDeleteSubsystem, func(c *Command) { c.NQN = nqnA }), ErrNotFound},
		{Command{V: 99, Op: OpRemoveNode}, ErrVersion},
		{c("frobnicate", func(*Command) {}), ErrInvalid},
	}
}

func snap(t *testing.T, s *State) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestApplyScript(t *testing.T) {
	s := New()
	for i, step := range script() {
		before := snap(t, s)
		_, err := s.Apply(step.c)
		if step.want == nil && err != nil || step.want != nil && !errors.Is(err, step.want) {
			t.Fatalf("step %d %s: err %v, want %v", i, step.c.Op, err, step.want)
		}
		if err != nil && !bytes.Equal(before, snap(t, s)) {
			t.Fatalf("step %d %s: rejected command changed the state", i, step.c.Op)
		}
	}
	if len(s.Volumes) != 1 || len(s.Subsystems) != 0 || len(s.Nodes) != 2 {
		t.Fatalf("final state %+v", s)
	}
}

// TestDeterministic: replaying the encoded log on a fresh state gives
// byte-identical snapshots, and a snapshot round-trips.
func TestDeterministicAndSnapshot(t *testing.T) {
	a, b := New(), New()
	for _, step := range script() {
		raw, err := step.c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		c, derr := DecodeCommand(raw)
		_, e1 := a.Apply(step.c)
		var e2 error
		if derr == nil {
			_, e2 = b.Apply(c)
		} else {
			e2 = derr
		}
		if (e1 == nil) != (e2 == nil) {
			t.Fatalf("%s: %v vs %v", step.c.Op, e1, e2)
		}
	}
	if !bytes.Equal(snap(t, a), snap(t, b)) {
		t.Fatal("replay differs")
	}
	r, err := ReadSnapshot(bytes.NewReader(snap(t, a)))
	if err != nil || !bytes.Equal(snap(t, r), snap(t, a)) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	if !bytes.Equal(snap(t, a.Clone()), snap(t, a)) {
		t.Fatal("clone differs")
	}
	if _, err := ReadSnapshot(strings.NewReader(`{"v":3,"state":{}}`)); !errors.Is(err, ErrVersion) {
		t.Fatalf("future snapshot: %v", err)
	}
	if _, err := ReadSnapshot(strings.NewReader(`{`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("garbage snapshot: %v", err)
	}
	if _, err := DecodeCommand([]byte(`nope`)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("garbage command: %v", err)
	}
}

func TestNamespaceAllocation(t *testing.T) {
	s := New()
	mustApply(t, s, Command{V: 1, Op: OpRegisterNode, Node: &Node{ID: "n1", APIAddr: "a", RaftAddr: "r"}})
	mustApply(t, s, Command{V: 1, Op: OpCreateSubsystem, Subsystem: &Subsystem{NQN: nqnA, Node: "n1"}})
	for i := 1; i <= 3; i++ {
		name := "v" + string(rune('0'+i))
		mustApply(t, s, Command{V: 1, Op: OpCreateVolume, Volume: vol(name, "n1", 4096)})
		nsid := uint32(0)
		if i == 2 {
			nsid = 7
		}
		r := mustApply(t, s, Command{V: 1, Op: OpAddNamespace, NQN: nqnA, Name: name, NSID: nsid})
		if want := map[int]uint32{1: 1, 2: 7, 3: 2}[i]; r.NSID != want {
			t.Fatalf("volume %d got nsid %d want %d", i, r.NSID, want)
		}
	}
	mustApply(t, s, Command{V: 1, Op: OpCreateVolume, Volume: vol("v9", "n1", 4096)})
	if _, err := s.Apply(Command{V: 1, Op: OpAddNamespace, NQN: nqnA, Name: "v9", NSID: MaxNSID + 1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("nsid > max: %v", err)
	}
}

func mustApply(t testing.TB, s *State, c Command) Result {
	t.Helper()
	r, err := s.Apply(c)
	if err != nil {
		t.Fatalf("%s: %v", c.Op, err)
	}
	return r
}

func FuzzDecodeApply(f *testing.F) {
	for _, step := range script() {
		b, _ := step.c.Encode()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := New()
		s.Apply(Command{V: 1, Op: OpRegisterNode, Node: &Node{ID: "n1", APIAddr: "a", RaftAddr: "r"}})
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		s.Apply(c) // must not panic
	})
}
