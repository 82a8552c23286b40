package mirror_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// fixedLeg is an async leg with fake fixed buffers and batching: it
// records its registrations, the fixed submissions it gets, and plugs.
type fixedLeg struct {
	*asyncLeg
	mu      sync.Mutex
	next    blockdev.FixedRegion
	regs    map[blockdev.FixedRegion][]byte
	fixedWr []fixedSub
	plugs   int
	unplugs int
}

type fixedSub struct {
	reg blockdev.FixedRegion
	buf *byte
}

func newFixedLeg(blocks uint64, bs int) *fixedLeg {
	return &fixedLeg{asyncLeg: newAsyncLeg(mem.New(blocks, bs)), next: 100, regs: map[blockdev.FixedRegion][]byte{}}
}

func (f *fixedLeg) RegisterFixed(region []byte) (blockdev.FixedRegion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.regs[f.next] = region
	return f.next, nil
}

func (f *fixedLeg) UnregisterFixed(reg blockdev.FixedRegion) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.regs, reg)
}

func (f *fixedLeg) SubmitReadFixed(buf []byte, lba uint64, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	return f.SubmitRead(buf, lba, done)
}

func (f *fixedLeg) SubmitWriteFixed(buf []byte, lba uint64, fl blockdev.WriteFlags, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	f.mu.Lock()
	if _, ok := f.regs[reg]; ok {
		f.fixedWr = append(f.fixedWr, fixedSub{reg: reg, buf: unsafe.SliceData(buf)})
	}
	f.mu.Unlock()
	return f.SubmitWrite(buf, lba, fl, done)
}

func (f *fixedLeg) Plug() {
	f.mu.Lock()
	f.plugs++
	f.mu.Unlock()
}

func (f *fixedLeg) Unplug() {
	f.mu.Lock()
	f.unplugs++
	f.mu.Unlock()
}

func (f *fixedLeg) state() (regs int, subs []fixedSub, plugs, unplugs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.regs), append([]fixedSub(nil), f.fixedWr...), f.plugs, f.unplugs
}

var (
	_ blockdev.FixedBuffers = (*fixedLeg)(nil)
	_ blockdev.AsyncBatcher = (*fixedLeg)(nil)
)

// TestCapabilitiesFollowLocalLeg: the mirror exposes AsyncBatcher,
// FixedBuffers and Resizer exactly when the local leg has them.
func TestCapabilitiesFollowLocalLeg(t *testing.T) {
	cases := []struct {
		local blockdev.Backend
		want  blockdevtest.Capability
	}{
		{mem.New(64, 512), blockdevtest.CapAsync | blockdevtest.CapResizer},
		{faulty.New(mem.New(64, 512)), blockdevtest.CapAsync},
		{newFixedLeg(64, 512), blockdevtest.CapAsync | blockdevtest.CapAsyncBatcher | blockdevtest.CapFixedBuffers | blockdevtest.CapResizer},
		{struct{ *fixedLeg }{newFixedLeg(64, 512)}, blockdevtest.CapAsync | blockdevtest.CapAsyncBatcher | blockdevtest.CapFixedBuffers | blockdevtest.CapResizer},
	}
	for _, c := range cases {
		m := newMirror(t, &okMembership{}, mirrorConfigSmall(), c.local)
		if got := blockdevtest.Capabilities(m.Backend()); got != c.want {
			t.Errorf("mirror over %T: %v, want %v", c.local, got, c.want)
		}
		m.Close()
	}
}

// TestFixedBuffersZeroCopy: a registration is made on every leg that
// takes fixed buffers (also legs added later), and a fixed write reaches
// each of them with its own handle and the caller's very buffer.
func TestFixedBuffersZeroCopy(t *testing.T) {
	const bs = 4096
	local, remote, plain := newFixedLeg(64, bs), newFixedLeg(64, bs), newAsyncLeg(mem.New(64, bs))
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local, remote, plain)
	defer m.Close()
	fb := m.Backend().(blockdev.FixedBuffers)
	region := blockdevtest.AlignedBuffer(4 * bs)
	reg, err := fb.RegisterFixed(region)
	if err != nil {
		t.Fatal(err)
	}
	late := newFixedLeg(64, bs)
	if err := m.AddLeg("late", late, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	buf := region[bs : 2*bs]
	copy(buf, pat(bs, bs, 7, 1))
	res := make(doneChan, 1)
	if !fb.SubmitWriteFixed(buf, 7, 0, reg, res) {
		t.Fatal("SubmitWriteFixed refused")
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*fixedLeg{"local": local, "remote": remote, "late": late} {
		n, subs, _, _ := l.state()
		if n != 1 || len(subs) != 1 || subs[0].buf != &buf[0] {
			t.Fatalf("%s leg: %d registrations, fixed writes %+v (want one, of the caller's buffer %p)", name, n, subs, &buf[0])
		}
	}
	got := blockdevtest.AlignedBuffer(bs)
	if err := plain.ReadAt([][]byte{got}, 7); err != nil || string(got) != string(buf) {
		t.Fatalf("plain leg: err %v, data equal %v", err, string(got) == string(buf))
	}
	if !fb.SubmitReadFixed(region[:bs], 7, reg, res) {
		t.Fatal("SubmitReadFixed refused")
	}
	if err := <-res; err != nil || string(region[:bs]) != string(buf) {
		t.Fatalf("fixed read: %v", err)
	}
	if _, err := m.RemoveLeg("late"); err != nil {
		t.Fatal(err)
	}
	fb.UnregisterFixed(reg)
	for name, l := range map[string]*fixedLeg{"local": local, "remote": remote, "late": late} {
		if n, _, _, _ := l.state(); n != 0 {
			t.Fatalf("%s leg keeps %d registrations", name, n)
		}
	}
	late.Close()
}

// TestPlugPairs: Plug and Unplug reach every batching leg in pairs, also
// when legs come and go between them.
func TestPlugPairs(t *testing.T) {
	local, a, b := newFixedLeg(64, 512), newFixedLeg(64, 512), newFixedLeg(64, 512)
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local, a)
	defer m.Close()
	bt := m.Backend().(blockdev.AsyncBatcher)
	bt.Plug()
	bt.Plug()
	if err := m.AddLeg("b", b, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	bt.Unplug() // b was not plugged: nothing to release there
	if _, err := m.RemoveLeg(legName(1)); err != nil {
		t.Fatal(err)
	}
	bt.Unplug()
	for name, l := range map[string]*fixedLeg{"local": local, "removed": a, "added": b} {
		if _, _, p, u := l.state(); p != u {
			t.Fatalf("%s leg: %d plugs, %d unplugs", name, p, u)
		}
	}
	a.Close()
}

// TestLocalLegFault: the local leg failing a write stops the volume: the
// write fails (ErrLocalFaulted, wrapping the leg's error), the fault is
// reported, every later I/O fails.
func TestLocalLegFault(t *testing.T) {
	const bs = 512
	g := newGate(nil)
	local := faulty.New(mem.New(64, bs))
	m := newMirror(t, g, mirrorConfigSmall(), local, mem.New(64, bs))
	defer m.Close()
	local.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
	err := m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0)
	if !errors.Is(err, mirror.ErrLocalFaulted) || !errors.Is(err, blockdev.ErrMedium) {
		t.Fatalf("write failing on the local leg: %v", err)
	}
	if leg := <-g.called; leg != "local" {
		t.Fatalf("Fault(%q), want the local leg", leg)
	}
	g.results <- nil
	p := make([]byte, bs)
	if err := m.ReadAt([][]byte{p}, 1); !errors.Is(err, mirror.ErrLocalFaulted) {
		t.Fatalf("read after the local fault: %v", err)
	}
	if err := m.WriteAt([][]byte{p}, 2, 0); !errors.Is(err, mirror.ErrLocalFaulted) {
		t.Fatalf("write after the local fault: %v", err)
	}
	if m.SubmitWrite(p, 2, 0, make(doneChan, 1)) {
		t.Fatal("SubmitWrite took I/O after the local fault")
	}
}

// orderLeg is an async, batching leg that records its async writes and
// Unplugs in a log shared by every leg of a mirror.
type orderLeg struct {
	*asyncLeg
	name string
	log  *eventLog
}

func (l *orderLeg) SubmitWrite(buf []byte, lba uint64, fl blockdev.WriteFlags, done blockdev.Completion) bool {
	l.log.add("write " + l.name)
	return l.asyncLeg.SubmitWrite(buf, lba, fl, done)
}

func (l *orderLeg) Plug()   {}
func (l *orderLeg) Unplug() { l.log.add("unplug " + l.name) }

// TestRemoteLegsFirst: an async write reaches the remote legs before the
// local one, and Unplug releases the remote legs' bursts first, so the
// copies' network round trip overlaps the local submission.
func TestRemoteLegsFirst(t *testing.T) {
	log := &eventLog{}
	legs := make([]blockdev.Backend, 3)
	for i, name := range []string{"local", legName(1), legName(2)} {
		legs[i] = &orderLeg{asyncLeg: newAsyncLeg(mem.New(64, 512)), name: name, log: log}
	}
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), legs...)
	defer m.Close()
	be := m.Backend()
	bt, ok := be.(blockdev.AsyncBatcher)
	if !ok {
		t.Fatal("mirror over batching legs is no AsyncBatcher")
	}
	d := make(doneChan, 1)
	bt.Plug()
	if !be.(blockdev.Async).SubmitWrite(make([]byte, 512), 3, 0, d) {
		t.Fatal("async write refused")
	}
	bt.Unplug()
	if err := <-d; err != nil {
		t.Fatal(err)
	}
	want := []string{
		"write " + legName(2), "write " + legName(1), "write local",
		"unplug " + legName(2), "unplug " + legName(1), "unplug local",
	}
	if got := log.String(); got != fmt.Sprint(want) {
		t.Fatalf("order of submissions and unplugs:\n got %s\nwant %v", got, want)
	}
}

// countLeg counts like a batching leg (internal/replica's): Unplug
// releases a Plug only if one is held — one that finds none is lost, and
// the leg would hold its next burst forever. onPlug runs inside the first
// Plug, before it counts.
type countLeg struct {
	*fixedLeg
	held, lost int
	onPlug     func()
}

func (c *countLeg) Plug() {
	if f := c.onPlug; f != nil {
		c.onPlug = nil
		f()
	}
	c.held++
}

func (c *countLeg) Unplug() {
	if c.held == 0 {
		c.lost++
		return
	}
	c.held--
}

// TestPlugAcrossAddLeg: a burst plugged before a leg was added unplugs
// while another burst is plugging that leg. The mirror must not release
// on the leg a Plug the leg has not counted yet: that release would be
// lost, and the leg left plugged for good (its writes held, never sent).
func TestPlugAcrossAddLeg(t *testing.T) {
	local := newFixedLeg(64, 512)
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local)
	defer m.Close()
	bt := m.Backend().(blockdev.AsyncBatcher)
	bt.Plug() // burst A: before x exists
	x := &countLeg{fixedLeg: newFixedLeg(64, 512)}
	x.onPlug = bt.Unplug // burst A ends while burst B is plugging x
	if err := m.AddLeg("x", x, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	bt.Plug() // burst B
	bt.Unplug()
	if x.lost != 0 || x.held != 0 {
		t.Fatalf("leg added between two bursts: %d releases lost, %d plugs held after both ended", x.lost, x.held)
	}
	if _, _, p, u := local.state(); p != u {
		t.Fatalf("local leg: %d plugs, %d unplugs", p, u)
	}
}
