package tcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// Listener is an NVMe/TCP port: it accepts connections on a TCP address
// and serves each as one NVMe queue of the target core.
type Listener struct {
	cfg Config
	ln  net.Listener
	log *slog.Logger

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool
	wg     sync.WaitGroup
	// allQuiet is closed by Close when every connection has drained.
	allQuiet chan struct{}
	stats    counters
	// unconnected counts connections before their Fabrics Connect, in
	// all and per host address (mu).
	unconnected   int
	unconnectedBy map[string]int
	// zcBroken: a connection could not make a zero-copy sender (no
	// io_uring); the others do not try.
	zcBroken atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

// Listen listens on cfg.Addr, registers the port with the target
// (transport type TCP, address family from the bound address, TSAS
// SECTYPE none) and accepts connections in the background until Close.
func Listen(cfg Config) (*Listener, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if cfg.PollSpins > 0 {
		nbsys.UseParked() // its readers spin: the process keeps the parked set
	}
	// Plain TCP, not Go's default Multipath TCP listener: NVMe/TCP hosts
	// do not speak MPTCP, and a connection accepted by an MPTCP listener
	// falls back to TCP without the socket flag that allows zero-copy
	// sends (io_uring's SENDMSG_ZC fails with EOPNOTSUPP on it).
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	ln, err := lc.Listen(context.Background(), "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("tcp: listen %s: %w", cfg.Addr, err)
	}
	l := &Listener{cfg: cfg, ln: ln, log: cfg.Logger, conns: make(map[*conn]struct{}), allQuiet: make(chan struct{}),
		unconnectedBy: make(map[string]int)}
	if err := cfg.Target.AddPort(l.Port()); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("tcp: registering port %d: %w", cfg.PortID, err)
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Addr is the bound address ("host:port", with the actual port).
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Port describes the listener to the target core and the discovery log.
func (l *Listener) Port() target.Port {
	ap, err := netip.ParseAddrPort(l.ln.Addr().String())
	host, svc := l.ln.Addr().String(), DefaultPort
	fam := uint8(nvme.AdrFamIPv4)
	if err == nil {
		host, svc = ap.Addr().Unmap().String(), fmt.Sprint(ap.Port())
		if ap.Addr().Is6() && !ap.Addr().Is4In6() {
			fam = nvme.AdrFamIPv6
		}
	}
	return target.Port{
		ID: l.cfg.PortID, TrType: nvme.TrTypeTCP, AdrFam: fam, TrAddr: host, TrSvcID: svc,
		// TSAS for TCP: SECTYPE (byte 0) 0, no transport security.
		Caps: target.TransportCaps{
			TrType:            nvme.TrTypeTCP,
			InCapsuleDataSize: l.cfg.InCapsuleDataSize,
			MaxDataTransfer:   l.cfg.MaxDataTransfer,
			MaxQueueDepth:     l.cfg.MaxQueueDepth,
			MaxSGLDescriptors: 1,
		},
	}
}

// Close stops accepting and drains every connection: it reads no more
// PDUs, lets the commands the core is executing finish and sends their
// responses (at most DrainTimeout per connection), then closes it;
// capsules not yet read and writes still waiting for their data are not
// executed, and the host retries them after reconnecting. Close waits for
// the connections' goroutines and unregisters the port. Idempotent.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		cs := make([]*conn, 0, len(l.conns))
		for c := range l.conns {
			cs = append(cs, c)
		}
		l.mu.Unlock()
		var errs []error
		if err := l.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		for _, c := range cs {
			c.drain()
		}
		if l.cfg.drained != nil {
			l.cfg.drained()
		}
		for _, c := range cs {
			<-c.quiet
		}
		close(l.allQuiet)
		l.wg.Wait()
		if err := l.cfg.Target.RemovePort(l.cfg.PortID); err != nil {
			errs = append(errs, err)
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// acceptLoop accepts until Close; a transient Accept error is logged and
// retried after a back-off (5 ms doubling up to 1 s).
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.log.Error("tcp: accept failed; retrying", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		host := hostOf(nc.RemoteAddr().String())
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = nc.Close()
			return
		}
		if (l.cfg.MaxUnconnected > 0 && l.unconnected >= l.cfg.MaxUnconnected) ||
			(l.cfg.MaxUnconnectedPerHost > 0 && l.unconnectedBy[host] >= l.cfg.MaxUnconnectedPerHost) {
			n, nh := l.unconnected, l.unconnectedBy[host]
			l.mu.Unlock()
			l.stats.refused.Add(1)
			_ = nc.Close()
			l.log.Warn("tcp: too many connections without a Fabrics Connect; refused one", "peer", nc.RemoteAddr().String(),
				"unconnected", n, "from_host", nh)
			continue
		}
		l.unconnected++
		l.unconnectedBy[host]++
		c := newConn(l, nc)
		c.host, c.unconn = host, true
		l.conns[c] = struct{}{}
		l.stats.accepted.Add(1)
		l.stats.connections.Add(1)
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			c.serve()
		}()
	}
}

// connected moves c out of the unconnected count (its reader, once, when
// its Fabrics Connect succeeded or it ends).
func (l *Listener) connected(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.unconn {
		return
	}
	c.unconn = false
	l.unconnected--
	if l.unconnectedBy[c.host]--; l.unconnectedBy[c.host] <= 0 {
		delete(l.unconnectedBy, c.host)
	}
}

// hostOf is the host part of a "host:port" address.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// forget drops c from the connection set (its reader, at exit).
func (l *Listener) forget(c *conn) {
	l.connected(c)
	l.mu.Lock()
	if _, ok := l.conns[c]; ok {
		delete(l.conns, c)
		l.stats.connections.Add(^uint64(0))
	}
	l.mu.Unlock()
}

// zcUnavailable records that io_uring cannot be used for zero-copy sends
// here (logged once): every connection copies.
func (l *Listener) zcUnavailable() {
	if !l.zcBroken.Swap(true) {
		l.log.Info("tcp: zero-copy send unavailable (needs io_uring with IORING_OP_SENDMSG_ZC, Linux 6.1); read data is copied into the socket",
			"addr", l.Addr())
	}
}
