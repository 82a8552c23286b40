package guest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
	"github.com/rdmablk/rdmablk/test/testproc"
	"github.com/rdmablk/rdmablk/test/verifyload"
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

// startNBDLoad starts a verifying load (see verifyload.Load) through conns
// NBD clients of sock with workersPerConn workers each: 4 KiB blocks, 8 per
// worker, every 5th write FUA, a flush after every 16th operation.
func startNBDLoad(t *testing.T, sock string, conns, workersPerConn int) *verifyload.Load {
	t.Helper()
	var workers []verifyload.Target
	for c := 0; c < conns; c++ {
		cl, err := nbdtest.Dial("unix", sock, "vol")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		workers = append(workers, verifyload.Repeat(cl, workersPerConn)...)
	}
	return verifyload.Start(t, verifyload.Config{
		BlockSize: 4096, Slots: 8, Timeout: 60 * time.Second, FUAEvery: 5, FlushEvery: 16,
	}, workers)
}

// daemon is rdmablkd as a child process with a fixed address, so that it
// can be killed and restarted on the same volume file and port.
type daemon struct {
	*testproc.Daemon
	cfg  string
	addr string
}

func newDaemon(t *testing.T, profile string, size int64) *daemon {
	t.Helper()
	dir := t.TempDir()
	d := &daemon{cfg: filepath.Join(dir, "rdmablkd.yaml"), addr: testproc.FreePort(t)}
	if err := os.WriteFile(d.cfg, testproc.SoftVolumeConfig(dir, profile, d.addr, size, testNQN), 0o600); err != nil {
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
