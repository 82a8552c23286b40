package guest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
	"github.com/rdmablk/rdmablk/test/testproc"
	"github.com/rdmablk/rdmablk/verbs"
)

const testNQN = "nqn.2026-11.io.rdmablk:guest"

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// recProvider records every connection the initiator resolves, for fault
// injection (soft.InjectQPError(id.QP()), soft.CutLink(id)).
type recProvider struct {
	verbs.Provider
	mu  sync.Mutex
	ids []verbs.ConnID
}

func (p *recProvider) Resolve(ctx context.Context, addr string, o verbs.ResolveOptions) (verbs.ConnID, error) {
	id, err := p.Provider.Resolve(ctx, addr, o)
	if err == nil {
		p.mu.Lock()
		p.ids = append(p.ids, id)
		p.mu.Unlock()
	}
	return id, err
}

// live returns the recorded connections still up, to addr ("" any).
func (p *recProvider) live(addr string) []verbs.ConnID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []verbs.ConnID
	for _, id := range p.ids {
		if id.Err() == nil && id.QP() != nil && (addr == "" || id.RemoteAddr() == addr) {
			out = append(out, id)
		}
	}
	return out
}

// startAttachment starts an attachment serving NBD on a unix socket.
func startAttachment(t *testing.T, cfg attach.Config, opts initiator.Options) (*attach.Attachment, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.Name, cfg.NQN, cfg.Device = "vol", testNQN, "none"
	if cfg.ReconnectDelay == 0 {
		cfg.ReconnectDelay = 50 * time.Millisecond
	}
	if cfg.CtrlLossTimeout == 0 {
		cfg.CtrlLossTimeout = 60 * time.Second
	}
	opts.IOQueues, opts.QueueDepth, opts.KeepAlive, opts.Logger = 2, 32, 2*time.Second, quiet()
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	a, err := attach.Start(context.Background(), cfg, opts, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Stop() })
	return a, filepath.Join(dir, "vol.sock")
}

// nbdLoad is a verifying load through NBD clients: each worker owns a
// region, writes a block with a new version, reads it back, and records
// what was acknowledged. Any error or mismatch fails the test.
type nbdLoad struct {
	t      *testing.T
	bs     int
	slots  int
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  map[int64][]byte
	ops    atomic.Int64
	client *nbdtest.Client
}

func startNBDLoad(t *testing.T, sock string, conns, workersPerConn int) *nbdLoad {
	t.Helper()
	l := &nbdLoad{t: t, bs: 4096, slots: 8, stop: make(chan struct{}), acked: map[int64][]byte{}}
	w := 0
	for c := 0; c < conns; c++ {
		cl, err := nbdtest.Dial("unix", sock, "vol")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		l.client = cl
		for k := 0; k < workersPerConn; k++ {
			l.wg.Add(1)
			go l.run(cl, w)
			w++
		}
	}
	return l
}

func (l *nbdLoad) run(c *nbdtest.Client, w int) {
	defer l.wg.Done()
	got := make([]byte, l.bs)
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		off := int64(w*l.slots+i%l.slots) * int64(l.bs)
		p := make([]byte, l.bs)
		for k := 0; k < l.bs; k += 8 {
			binary.LittleEndian.PutUint64(p[k:], uint64(w)<<48|uint64(i)<<16|uint64(k))
		}
		var err error
		if i%5 == 4 {
			err = c.WriteFUA(p, off)
		} else {
			_, err = c.WriteAt(p, off)
		}
		if err != nil {
			l.t.Errorf("worker %d: write at %d: %v", w, off, err)
			return
		}
		l.mu.Lock()
		l.acked[off] = p
		l.mu.Unlock()
		if _, err := c.ReadAt(got, off); err != nil {
			l.t.Errorf("worker %d: read at %d: %v", w, off, err)
			return
		}
		if !bytes.Equal(got, p) {
			l.t.Errorf("worker %d: read at %d is not the last acknowledged write", w, off)
			return
		}
		if i%16 == 15 {
			if err := c.Flush(); err != nil {
				l.t.Errorf("worker %d: flush: %v", w, err)
				return
			}
		}
		l.ops.Add(1)
	}
}

// waitOps waits until n more operations completed.
func (l *nbdLoad) waitOps(n int64) {
	l.t.Helper()
	target := l.ops.Load() + n
	deadline := time.Now().Add(60 * time.Second)
	for l.ops.Load() < target {
		if l.t.Failed() {
			l.t.FailNow()
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("load stalled at %d ops", l.ops.Load())
		}
		time.Sleep(2 * time.Millisecond) // polling a counter, not synchronising
	}
}

// finish stops the load and re-reads every acknowledged block.
func (l *nbdLoad) finish() {
	l.t.Helper()
	close(l.stop)
	l.wg.Wait()
	got := make([]byte, l.bs)
	for off, want := range l.acked {
		if _, err := l.client.ReadAt(got, off); err != nil {
			l.t.Fatalf("final read at %d: %v", off, err)
		}
		if !bytes.Equal(got, want) {
			l.t.Fatalf("final read at %d differs from the last acknowledged write", off)
		}
	}
}

// waitPath waits until path i of s is in state st (and preferred).
func waitPath(t *testing.T, s *initiator.Session, i int, st initiator.PathState, pref bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		ch := s.Changed()
		p := s.Paths()[i]
		if p.State == st && (!pref || p.Preferred) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("path %d: %+v, want %v preferred=%v", i, p, st, pref)
		}
	}
}

// daemon is rdmablkd as a child process with a fixed address, so that it
// can be killed and restarted on the same volume file and port.
type daemon struct {
	*testproc.Daemon
	cfg  string
	addr string
}

const daemonConfig = `data_dir: %s
log: {level: info, format: json}
transport: {provider: soft, profile: %s}
listeners:
  - addr: %s
volumes:
  - {name: vol0, path: vol0.img, size: %d, block_size: 512}
subsystems:
  - nqn: ` + testNQN + `
    allow_any_host: true
    namespaces:
      - {nsid: 1, volume: vol0}
`

func newDaemon(t *testing.T, profile string, size int64) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{cfg: filepath.Join(dir, "rdmablkd.yaml"), addr: testproc.FreePort(t)}
	if err := os.WriteFile(d.cfg, fmt.Appendf(nil, daemonConfig, dir, profile, d.addr, size), 0o600); err != nil {
		t.Fatal(err)
	}
	d.Daemon = testproc.New(t, testproc.BuildGoBinary(t, "github.com/rdmablk/rdmablk/cmd/rdmablkd"))
	return d
}

// start runs the daemon and waits for its ready line.
func (d *daemon) start() {
	d.Start("--config", d.cfg)
	d.WaitLog("rdmablkd ready", 60*time.Second)
}
