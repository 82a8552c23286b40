package attach

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const nbdTestNQN = "nqn.2026-11.io.rdmablk:nbdbackend"

// nbdSession serves a 4 MiB mem namespace over the soft provider and
// opens a Session to it with queues x depth.
func nbdSession(t testing.TB, queues, depth int) *initiator.Session {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	fab := soft.NewFabric()
	tgt := target.New(target.Options{Logger: log})
	be := mem.New(8192, 512)
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{NQN: nbdTestNQN, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}}}); err != nil {
		t.Fatal(err)
	}
	l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt, Addr: "192.0.2.1:4420", PortID: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := initiator.OpenSession(context.Background(), initiator.SessionOptions{
		Options: initiator.Options{Provider: soft.New(soft.Options{Fabric: fab}), Logger: log, IOQueues: queues, QueueDepth: depth},
		SubNQN:  nbdTestNQN, Paths: []string{"192.0.2.1:4420"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close(); l.Close(); tgt.Close(); be.Close() })
	return sess
}

// nbdServe serves backend as export "v" on a unix socket.
func nbdServe(t testing.TB, backend nbd.Backend) string {
	t.Helper()
	srv, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Name: "v", Backend: backend}}})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "v.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return sock
}

// nbdClient connects to export "v" on sock, until the test ends.
func nbdClient(t *testing.T, sock string) *nbdtest.Client {
	t.Helper()
	c, err := nbdtest.Dial("unix", sock, "v")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNBDBackendAsync: the attachment's backend is an nbd.AsyncBackend
// that keeps every capability of the Session (flush, FUA, trim, write
// zeroes), and NBD requests through it — many at once on each of two
// connections sharing 2 queues of depth 4, so requests wait for queue
// slots — read back what was written; a flush on one connection follows
// writes answered on the other.
func TestNBDBackendAsync(t *testing.T) {
	sess := nbdSession(t, 2, 4)
	var be nbd.Backend = newNBDBackend(sess)
	if _, ok := be.(nbd.AsyncBackend); !ok {
		t.Fatal("nbdBackend is not an nbd.AsyncBackend")
	}
	for name, ok := range map[string]bool{
		"Flusher": is[nbd.Flusher](be), "FUAWriter": is[nbd.FUAWriter](be),
		"Trimmer": is[nbd.Trimmer](be), "Zeroer": is[nbd.Zeroer](be),
	} {
		if !ok {
			t.Errorf("nbdBackend hides the Session's %s", name)
		}
	}
	sock := nbdServe(t, be)
	var wg sync.WaitGroup
	for conn := range 2 {
		c := nbdClient(t, sock)
		if c.Flags&nbd.TFlagSendTrim == 0 {
			t.Fatalf("flags %#x: no trim", c.Flags)
		}
		for g := range 16 {
			wg.Add(1)
			go func(region int64) {
				defer wg.Done()
				base := region * 64 << 10
				p, got := make([]byte, 8192), make([]byte, 8192)
				for i := range 20 {
					off := base + int64(i%8)*8192
					for j := 0; j < len(p); j += 8 {
						binary.LittleEndian.PutUint64(p[j:], uint64(off+int64(j))^uint64(i))
					}
					var err error
					if i%5 == 4 {
						err = c.WriteFUA(p, off)
					} else {
						_, err = c.WriteAt(p, off)
					}
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := c.ReadAt(got, off); err != nil || !bytes.Equal(got, p) {
						t.Errorf("region %d: read back differs (%v)", region, err)
						return
					}
				}
			}(int64(conn*16 + g))
		}
	}
	wg.Wait()
	c := nbdClient(t, sock)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	p := bytes.Repeat([]byte{0xA5}, 4096)
	if _, err := c.WriteAt(p, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteZeroes(512, 1024); err != nil {
		t.Fatal(err)
	}
	if err := c.Trim(2048, 1024); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4096)
	if _, err := c.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(p)
	clear(want[512:1536])
	if !bytes.Equal(got[:2048], want[:2048]) || !bytes.Equal(got[3072:], want[3072:]) {
		t.Fatal("write zeroes hit the wrong blocks")
	}
	if _, err := c.ReadAt(got, sess.Size()-512); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("read past the end: %v, want EINVAL", err)
	}
}

func is[T any](v any) bool { _, ok := v.(T); return ok }

// TestNBDBackendSessionClosed: once the session is closed, requests on
// the async path are answered with EIO (not hung, not a dropped
// connection), and the server shuts down.
func TestNBDBackendSessionClosed(t *testing.T) {
	sess := nbdSession(t, 1, 4)
	sock := nbdServe(t, newNBDBackend(sess))
	c := nbdClient(t, sock)
	if _, err := c.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	if _, err := c.ReadAt(make([]byte, 4096), 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read after the session closed: %v, want EIO", err)
	}
	if _, err := c.WriteAt(make([]byte, 4096), 4096); !errors.Is(err, syscall.EIO) {
		t.Fatalf("write after the session closed: %v, want EIO", err)
	}
}
