package e2e

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/target/tcp"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// pathListener is one listener of a multi-transport target: a soft RDMA
// listener on the fabric or an NVMe/TCP listener on loopback.
type pathListener struct {
	tcp  bool
	addr string // as a session path: "tcp://127.0.0.1:port" or the fabric address
	port uint16
	l    interface{ Close() error }
}

func listenPath(t testing.TB, tgt *target.Target, fab *soft.Fabric, isTCP bool, addr string, port uint16) *pathListener {
	t.Helper()
	p := &pathListener{tcp: isTCP, port: port}
	if isTCP {
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		l, err := tcp.Listen(tcp.Config{Target: tgt, Addr: addr, PortID: port, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		p.l, p.addr = l, "tcp://"+l.Addr()
	} else {
		l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt, Addr: addr, PortID: port, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		p.l, p.addr = l, l.Addr()
	}
	t.Cleanup(func() { _ = p.l.Close() })
	return p
}

// TestAsyncMultipathAcrossTransports: a session whose paths are one RDMA
// and one NVMe/TCP listener of the same target (and two NVMe/TCP ones)
// keeps a verified asynchronous load running while the first path goes
// away — its commands replayed on the other transport — and fails back
// when it returns.
func TestAsyncMultipathAcrossTransports(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b bool // path A, B over TCP
	}{
		{"rdma-then-tcp", false, true},
		{"tcp-then-rdma", true, false},
		{"tcp-then-tcp", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fab := soft.NewFabric()
			tgt, _ := fabricTarget(t, fab, mem.New(16384, 512))
			fabAddr := func(isTCP bool, a string) string {
				if isTCP {
					return "" // a free loopback port
				}
				return a
			}
			pa := listenPath(t, tgt, fab, tc.a, fabAddr(tc.a, "mx-a:4420"), 1)
			pb := listenPath(t, tgt, fab, tc.b, fabAddr(tc.b, "mx-b:4420"), 2)
			s := openSession(t, soft.New(soft.Options{Fabric: fab}), []string{pa.addr, pb.addr}, 2, 16)
			waitConnects(t, s, 0, 0, time.Minute)
			waitConnects(t, s, 1, 0, time.Minute)
			load := startAsyncLoad(t, s, 16, 64)
			load.waitVerified(t, 30, time.Minute)
			if err := pa.l.Close(); err != nil {
				t.Fatal(err)
			}
			load.waitVerified(t, 30, time.Minute)
			if p := s.Paths(); !p[1].Preferred || p[0].State == initiator.PathLive {
				t.Fatalf("after path A went away: %+v", p)
			}
			connects := s.Paths()[0].Connects
			host := "mx-a:4420"
			if tc.a {
				host = pa.addr[len("tcp://"):]
			}
			listenPath(t, tgt, fab, tc.a, host, 1)
			waitConnects(t, s, 0, connects, time.Minute)
			load.waitVerified(t, 30, time.Minute)
			if p := s.Paths(); !p[0].Preferred {
				t.Fatalf("I/O did not fail back to path A: %+v", p)
			}
			load.finish(t)
		})
	}
}

// TestMemRegionOverTCP: Session.RegisterBuffer works over NVMe/TCP as a
// registration without registering anything: requests inside the region
// are served correctly, the write sent from the caller's buffer as every
// NVMe/TCP write is (ZeroCopyBytes), the read copied through a pool
// buffer (CopiedBytes).
func TestMemRegionOverTCP(t *testing.T) {
	fab := soft.NewFabric()
	tgt, _ := fabricTarget(t, fab, mem.New(1024, 512))
	p := listenPath(t, tgt, fab, true, "", 2)
	s := openSession(t, nil, []string{p.addr}, 2, 16)
	buf := make([]byte, 64<<10)
	m, err := s.RegisterBuffer(buf)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range buf[:32<<10] {
		buf[i] = byte(i*5 + 3)
	}
	if _, err := s.WriteAt(buf[:32<<10], 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadAt(buf[32<<10:], 4096); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[:32<<10], buf[32<<10:]) {
		t.Fatal("read back differs")
	}
	if st := s.Stats(); st.ZeroCopyBytes != 32<<10 || st.CopiedBytes != 32<<10 {
		t.Fatalf("copied %d, zero copy %d", st.CopiedBytes, st.ZeroCopyBytes)
	}
}

// TestDHCHAPOverTCP: in-band authentication (bidirectional, on the admin
// and the I/O queue: AUTH_Send in the capsule, AUTH_Receive in C2HData)
// works over NVMe/TCP, and a wrong secret is refused with no I/O reaching
// the backend.
func TestDHCHAPOverTCP(t *testing.T) {
	be := &ioCounter{Backend: mem.New(4096, 512)}
	tgt := target.New(target.Options{Logger: quietLogger()})
	sub, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "e2eauth2", RequireAuth: true, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tgt.Close() })
	p := listenPath(t, tgt, nil, true, "", 1)
	host, ctrl := newSecret(t, auth.HashSHA256, 32), newSecret(t, 0, 48)
	if err := sub.SetHostAuth(authHostNQN, &target.HostAuth{Secret: host, CtrlSecret: &ctrl,
		Hashes: []auth.HashID{auth.HashSHA512}, DHGroups: []auth.DHGroupID{auth.FFDHE2048}}); err != nil {
		t.Fatal(err)
	}
	c, err := authTry(nil, p.addr, &host, &ctrl)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := c.Namespace(1)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{0x5A}, 4096)
	if _, err := ns.WriteAt(want, 8192); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4096)
	if _, err := ns.ReadAt(got, 8192); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v", err)
	}
	c.Close()
	before := be.n.Load()
	wrong := newSecret(t, auth.HashSHA256, 32)
	if c, err := authTry(nil, p.addr, &wrong, nil); err == nil || !errors.Is(err, initiator.ErrAuthFailed) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("wrong secret: %v", err)
	}
	if n := be.n.Load(); n != before {
		t.Fatalf("%d I/Os reached the backend from a refused host", n-before)
	}
}
