package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// model is what the volume must hold: each writer owns a disjoint set of
// 4-block groups (sharing regions with the others) and records what it
// last wrote there once the write was acknowledged.
type model struct {
	bs     int
	blocks uint64
	mu     sync.Mutex
	want   []byte
	// onWrite, if set, runs after every acknowledged write.
	onWrite func()
	// tolerate: writes failing with it are not recorded and not test
	// failures; failed counts them.
	tolerate error
	failed   atomic.Int64
}

func newModel(blocks uint64, bs int) *model {
	return &model{bs: bs, blocks: blocks, want: make([]byte, int(blocks)*bs)}
}

func (md *model) set(lba uint64, p []byte) {
	md.mu.Lock()
	copy(md.want[int(lba)*md.bs:], p)
	md.mu.Unlock()
}

// writers runs n writers of rounds random writes, FUA writes and write
// zeroes each on b, all acknowledged ones recorded in md. Failures are
// reported on t.
func writers(t *testing.T, b blockdev.Backend, md *model, n, rounds int, seed uint64) {
	t.Helper()
	const group = 4
	groups := md.blocks / group
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			a, _ := b.(blockdev.Async)
			res := make(doneChan, 1)
			for r := range rounds {
				g := uint64(rng.IntN(int(groups/uint64(n))))*uint64(n) + uint64(w)
				lba := g*group + uint64(rng.IntN(group))
				cnt := 1 + rng.IntN(int(g*group+group-lba))
				var err error
				var data []byte
				switch k := rng.IntN(10); {
				case k == 0:
					err = b.WriteZeroes(lba, uint64(cnt))
					data = make([]byte, cnt*md.bs)
				default:
					data = pat(cnt*md.bs, md.bs, lba, uint64(w*rounds+r+1))
					fl := blockdev.WriteFlags(0)
					if k == 1 {
						fl = blockdev.WriteFUA
					}
					if a != nil && k%2 == 0 && a.SubmitWrite(data, lba, fl, res) {
						err = <-res
					} else {
						err = b.WriteAt([][]byte{data}, lba, fl)
					}
				}
				if err != nil && md.tolerate != nil && errors.Is(err, md.tolerate) {
					md.failed.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("writer %d round %d: %v", w, r, err)
					return
				}
				md.set(lba, data)
				if md.onWrite != nil {
					md.onWrite()
				}
			}
		}()
	}
	wg.Wait()
}

// whole reads all of b.
func whole(t *testing.T, b blockdev.Backend) []byte {
	t.Helper()
	p := make([]byte, int(b.Blocks())*b.BlockSize())
	if err := b.ReadAt([][]byte{p}, 0); err != nil {
		t.Fatal(err)
	}
	return p
}

func sameAs(t *testing.T, what string, got, want []byte, bs int) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := 0; i < len(got); i += bs {
		if !bytes.Equal(got[i:i+bs], want[i:i+bs]) {
			t.Fatalf("%s: block %d differs", what, i/bs)
		}
	}
}

// TestNoAckMissingOnInSyncLeg: concurrent writers while legs fail writes
// (before touching the media, and after: data landed but reported
// failed). Every acknowledged write is on every leg still in sync at the
// end; the faulted ones, once rebuilt from their dirty bitmaps, hold it
// too.
func TestNoAckMissingOnInSyncLeg(t *testing.T) {
	// 16 MiB, 1024 regions of 16 KiB: the writes after a fault dirty only
	// some of them, so a failed write whose region was not marked shows.
	const bs, blocks = 512, 32768
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			mb := &okMembership{}
			local := mem.New(blocks, bs)
			inner := []*mem.Backend{mem.New(blocks, bs), mem.New(blocks, bs), mem.New(blocks, bs)}
			f1, f2 := faulty.New(inner[0]), faulty.New(newAsyncLeg(inner[1]))
			m := newMirror(t, mb, mirrorConfigSmall(), newAsyncLeg(local), f1, f2, newAsyncLeg(inner[2]))
			defer m.Close()
			f1.Inject(faulty.Rule{Ops: faulty.OpWrite | faulty.OpWriteZeroes, Every: 500 + 37*seed, Times: 1})
			f2.Inject(faulty.Rule{Ops: faulty.OpWrite, Every: 31, Times: 1, After: true})
			md := newModel(blocks, bs)
			writers(t, m.Backend(), md, 6, 150, seed)
			if t.Failed() {
				return
			}
			sameAs(t, "local leg", whole(t, local), md.want, bs)
			faulted := 0
			for i, st := range m.Legs()[1:] {
				switch st.State {
				case mirror.InSync:
					sameAs(t, "in-sync leg "+st.Name, whole(t, inner[i]), md.want, bs)
				case mirror.Faulted:
					faulted++
					if err := m.SetState(st.Name, mirror.Syncing); err != nil {
						t.Fatal(err)
					}
					if err := m.Rebuild(context.Background(), st.Name, mirror.RebuildOptions{}); err != nil {
						t.Fatalf("rebuild %s: %v", st.Name, err)
					}
					if err := m.SetState(st.Name, mirror.InSync); err != nil {
						t.Fatal(err)
					}
					sameAs(t, "rebuilt leg "+st.Name, whole(t, inner[i]), md.want, bs)
				default:
					t.Fatalf("leg %+v", st)
				}
			}
			if faulted != 2 || len(mb.list()) != 2 {
				t.Fatalf("%d legs faulted, faults recorded %v; want the two faulty legs", faulted, mb.list())
			}
		})
	}
}

// TestRebuildUnderWriters: a leg added with no history (full copy) and a
// leg faulted earlier (dirty regions only) are rebuilt while writers keep
// writing; at the end both are byte-identical to the local leg.
func TestRebuildUnderWriters(t *testing.T) {
	const bs, blocks = 4096, 512 // 2 MiB, 128 regions of 16 KiB
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			local, old, fresh := mem.New(blocks, bs), mem.New(blocks, bs), mem.New(blocks, bs)
			m := newMirror(t, &okMembership{}, mirrorConfigSmall(), newAsyncLeg(local), old)
			defer m.Close()
			md := newModel(blocks, bs)
			writers(t, m.Backend(), md, 4, 40, seed)
			if err := m.SetState(legName(1), mirror.Faulted); err != nil {
				t.Fatal(err)
			}
			writers(t, m.Backend(), md, 4, 40, seed+100)
			if err := m.AddLeg("fresh", fresh, mirror.Syncing); err != nil {
				t.Fatal(err)
			}
			if err := m.SetState(legName(1), mirror.Syncing); err != nil {
				t.Fatal(err)
			}
			// The rebuilds advance one region per few writes (their rate
			// limit sleeps on a clock the writers tick), so the copies
			// interleave with the writes whatever the scheduling.
			clk := newTickClock()
			md.onWrite = clk.tick
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for _, leg := range []string{legName(1), "fresh"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- m.Rebuild(context.Background(), leg, mirror.RebuildOptions{BytesPerSecond: 1, Clock: clk})
				}()
			}
			writers(t, m.Backend(), md, 4, 200, seed+200)
			clk.stop()
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, leg := range []string{legName(1), "fresh"} {
				if err := m.SetState(leg, mirror.InSync); err != nil {
					t.Fatal(err)
				}
			}
			want := whole(t, local)
			sameAs(t, "local leg", want, md.want, bs)
			sameAs(t, "rebuilt leg", whole(t, old), want, bs)
			sameAs(t, "fresh leg", whole(t, fresh), want, bs)
		})
	}
}

// tickClock is a Clock whose Sleep advances time by the duration asked
// and then waits for one tick (or for stop).
type tickClock struct {
	mu      sync.Mutex
	now     time.Time
	ticks   chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newTickClock() *tickClock {
	return &tickClock{now: time.Unix(1e9, 0), ticks: make(chan struct{}), stopped: make(chan struct{})}
}

func (c *tickClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *tickClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	select {
	case <-c.ticks:
	case <-c.stopped:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// tick lets one sleeper go, if one is waiting.
func (c *tickClock) tick() {
	select {
	case c.ticks <- struct{}{}:
	default:
	}
}

func (c *tickClock) stop() { c.once.Do(func() { close(c.stopped) }) }

// partitioned's Fault always fails: the owner cannot reach a quorum.
type partitioned struct{ calls atomic.Int64 }

func (p *partitioned) Fault(string, error) error {
	p.calls.Add(1)
	return errors.New("raft: no leader")
}

// TestPartitionedOwner: once a leg fails and the fault cannot be
// recorded, no further write is acknowledged, and every acknowledged
// write is on that leg (concurrent writers, sync and async).
func TestPartitionedOwner(t *testing.T) {
	const bs, blocks = 512, 4096
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			p := &partitioned{}
			inner := mem.New(blocks, bs)
			leg := faulty.New(newAsyncLeg(inner))
			m := newMirror(t, p, mirrorConfigSmall(), newAsyncLeg(mem.New(blocks, bs)), leg, mem.New(blocks, bs))
			defer m.Close()
			leg.Inject(faulty.Rule{Ops: faulty.OpWrite | faulty.OpWriteZeroes, Every: 100 + 20*seed, Times: 1})
			md := newModel(blocks, bs)
			md.tolerate = mirror.ErrFenced
			writers(t, m.Backend(), md, 6, 100, seed)
			if t.Failed() {
				return
			}
			sameAs(t, "the leg the owner could not fault", whole(t, inner), md.want, bs)
			if md.failed.Load() == 0 || p.calls.Load() == 0 {
				t.Fatalf("%d writes fenced, %d fault records tried: the fault did not happen", md.failed.Load(), p.calls.Load())
			}
		})
	}
}
