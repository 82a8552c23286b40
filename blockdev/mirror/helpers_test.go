package mirror_test

import (
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// asyncLeg gives a backend an Async path: one completion goroutine runs
// the I/O from a bounded queue (value sends: no allocation per I/O).
type asyncLeg struct {
	blockdev.Backend
	q    chan asyncReq
	once sync.Once
	wg   sync.WaitGroup
}

type asyncReq struct {
	buf   []byte
	lba   uint64
	write bool
	flags blockdev.WriteFlags
	done  blockdev.Completion
}

func newAsyncLeg(b blockdev.Backend) *asyncLeg {
	a := &asyncLeg{Backend: b, q: make(chan asyncReq, 256)}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		var vec [1][]byte
		for r := range a.q {
			vec[0] = r.buf
			var err error
			if r.write {
				err = a.Backend.WriteAt(vec[:], r.lba, r.flags)
			} else {
				err = a.Backend.ReadAt(vec[:], r.lba)
			}
			r.done.IODone(err)
		}
	}()
	return a
}

func (a *asyncLeg) submit(r asyncReq) bool {
	select {
	case a.q <- r:
		return true
	default:
		return false
	}
}

func (a *asyncLeg) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	return a.submit(asyncReq{buf: buf, lba: lba, done: done})
}

func (a *asyncLeg) SubmitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, done blockdev.Completion) bool {
	return a.submit(asyncReq{buf: buf, lba: lba, write: true, flags: flags, done: done})
}

// Resize forwards to the inner backend (mem and null resize in place).
func (a *asyncLeg) Resize(blocks uint64) error { return a.Backend.(blockdev.Resizer).Resize(blocks) }

func (a *asyncLeg) Close() error {
	a.once.Do(func() { close(a.q); a.wg.Wait() })
	return a.Backend.Close()
}

var _ blockdev.Async = (*asyncLeg)(nil)

// okMembership records faults and always commits.
type okMembership struct {
	mu     sync.Mutex
	faults []string
}

func (m *okMembership) Fault(leg string, _ error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults = append(m.faults, leg)
	return nil
}

func (m *okMembership) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.faults...)
}

// newMirror builds a mirror over legs (the first is local), all in sync.
func newMirror(t testing.TB, mb mirror.Membership, cfg mirror.Config, legs ...blockdev.Backend) *mirror.Mirror {
	t.Helper()
	cfg.LocalName, cfg.Local, cfg.Membership = "local", legs[0], mb
	m, err := mirror.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range legs[1:] {
		if err := m.AddLeg(legName(i+1), l, mirror.InSync); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func legName(i int) string { return string(rune('a'+i-1)) + "-remote" }

func memLegs(n int, blocks uint64, bs int, async bool) []blockdev.Backend {
	out := make([]blockdev.Backend, n)
	for i := range out {
		var b blockdev.Backend = mem.New(blocks, bs)
		if async {
			b = newAsyncLeg(b)
		}
		out[i] = b
	}
	return out
}

// mirrorConfigSmall: 16 KiB regions, so that the suite's small volumes
// have many.
func mirrorConfigSmall() mirror.Config {
	return mirror.Config{RegionBytes: 16 << 10, MaxInFlight: 32, Workers: 4}
}
