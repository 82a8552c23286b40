package tcp

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// TestIdleReaderSpins: at QD1 an I/O queue's reader takes the host's next
// command while it spins instead of parking (Stats.SpinReads) — also when
// the backend completes later (a blockdev.Poller that finishes I/O only
// when polled, or after 50 ms: the spinning reader polls it and answers
// from there); with PollSpins negative, or left at its default, it never
// spins; while another descriptor of the process's parked set is ready it
// gives every spin up at once (Stats.SpinYields) and reads nothing by
// spinning — that goroutine needs the runtime's poll. The budget is large
// enough that the next command, sent by another thread, always comes
// within it.
func TestIdleReaderSpins(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	const reads = 20
	for _, c := range []struct {
		name   string
		spins  int
		other  bool
		spun   bool // most reads after the first came while spinning
		yields bool
		lazy   bool // a backend that completes late unless polled
	}{
		{"spins", 1 << 22, false, true, false, false},
		{"spins-polling-the-backend", 1 << 22, false, true, false, true},
		{"off", -1, false, false, false, false},
		{"default-off", 0, false, false, false, false},
		{"another-descriptor-ready", 1 << 22, true, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.other {
				fd, err := unix.Eventfd(1, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(fd)
				nbsys.UseParked() // as a spinning listener does; its own comes later
				if err := nbsys.WatchParked(fd, unix.EPOLLIN); err != nil {
					t.Fatal(err)
				}
			}
			var be blockdev.Backend
			var lazy *lazyBackend
			if c.lazy {
				lazy = &lazyBackend{Backend: mem.New(testBlocks, testBlock)}
				be = lazy
			}
			r := newRigWith(t, be, func(cfg *Config) { cfg.PollSpins = c.spins })
			admin := r.adminHost(t, tcppdu.Digests{}, 8192)
			io := r.ioHost(t, admin, tcppdu.Digests{}, 8192)
			for i := range reads {
				var sqe nvme.SQE
				sqe.SetRW(nvme.IORead, 1, uint64(i*8), 8, 0)
				io.must(&sqe, nil, 4096)
			}
			st := r.l.Stats()
			if spun := st.SpinReads >= reads/2; spun != c.spun || c.spins <= 0 && st.SpinReads != 0 || c.other && st.SpinReads != 0 {
				t.Errorf("%d of %d QD1 reads came while spinning (want most: %v)", st.SpinReads, reads, c.spun)
			}
			if lazy != nil && lazy.polled.Load() < reads/2 {
				t.Errorf("%d of %d reads finished by the reader's poll, want most", lazy.polled.Load(), reads)
			}
			if yields := st.SpinYields > 0; yields != c.yields {
				t.Errorf("%d spins given up for another descriptor (want some: %v)", st.SpinYields, c.yields)
			}
		})
	}
}

// lazyBackend completes its asynchronous reads only when polled
// (blockdev.Poller), or 50 ms later on a timer.
type lazyBackend struct {
	*mem.Backend
	mu      sync.Mutex
	pending []lazyIO
	polled  atomic.Int32
}

type lazyIO struct {
	buf  []byte
	lba  uint64
	done blockdev.Completion
}

func (b *lazyBackend) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	b.mu.Lock()
	b.pending = append(b.pending, lazyIO{buf, lba, done})
	b.mu.Unlock()
	time.AfterFunc(50*time.Millisecond, func() { b.finish() })
	return true
}

func (b *lazyBackend) SubmitWrite([]byte, uint64, blockdev.WriteFlags, blockdev.Completion) bool {
	return false
}

func (b *lazyBackend) Plug()   {}
func (b *lazyBackend) Unplug() {}

func (b *lazyBackend) Poll() int {
	n := b.finish()
	b.polled.Add(int32(n))
	return n
}

func (b *lazyBackend) finish() int {
	b.mu.Lock()
	p := b.pending
	b.pending = nil
	b.mu.Unlock()
	for _, io := range p {
		io.done.IODone(b.ReadAt([][]byte{io.buf}, io.lba))
	}
	return len(p)
}

// NonBlocking: false, so that the core submits (mem's reads would be
// done inline).
func (b *lazyBackend) NonBlocking() bool { return false }
