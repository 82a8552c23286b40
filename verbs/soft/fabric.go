package soft

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/rdmablk/rdmablk/verbs"
)

// Fabric is an in-process network. Providers created with the same Fabric
// reach each other's Listen addresses through in-memory connections; no
// sockets are opened. Addresses are any "host:port" strings; a listener on
// host "", "0.0.0.0" or "::" accepts connections to any host at its port.
// A Fabric is safe for concurrent use and needs no cleanup.
type Fabric struct {
	mu        sync.Mutex // guards the fields below
	listeners map[string]*fabricListener
	nextPort  int
	nextConn  int
}

// NewFabric returns an empty in-process network.
func NewFabric() *Fabric {
	return &Fabric{listeners: make(map[string]*fabricListener), nextPort: 49152}
}

// fabricBacklog bounds connections not yet taken by the listener's accept loop.
const fabricBacklog = 128

// listen binds addr; port 0 picks a free port.
func (f *Fabric) listen(addr string) (*fabricListener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if port == 0 {
		for {
			f.nextPort++
			if f.nextPort > 65535 {
				f.nextPort = 49152
			}
			if _, used := f.listeners[net.JoinHostPort(host, strconv.Itoa(f.nextPort))]; !used {
				port = f.nextPort
				break
			}
		}
	}
	key := net.JoinHostPort(host, strconv.Itoa(port))
	if _, used := f.listeners[key]; used {
		return nil, fmt.Errorf("%w: fabric address %s in use", verbs.ErrInvalid, key)
	}
	l := &fabricListener{f: f, key: key, conns: make(chan net.Conn, fabricBacklog), done: make(chan struct{})}
	f.listeners[key] = l
	return l, nil
}

// dial connects to addr. No listener there gives *verbs.RejectError with
// Consumer false, as an RDMA CM REJ for an unknown service ID would.
func (f *Fabric) dial(ctx context.Context, addr, local string) (net.Conn, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.listeners[net.JoinHostPort(host, strconv.Itoa(port))]
	for _, wild := range []string{"", "0.0.0.0", "::"} {
		if l != nil {
			break
		}
		l = f.listeners[net.JoinHostPort(wild, strconv.Itoa(port))]
	}
	if l == nil {
		return nil, &verbs.RejectError{}
	}
	f.nextConn++
	// The client's address is "host:port" like a TCP peer's: the host
	// from the local address asked for (default "fabric-client"), a port
	// unique per connection.
	lhost := "fabric-client"
	if local != "" {
		lhost = local
		if h, _, err := net.SplitHostPort(local); err == nil {
			lhost = h
		}
	}
	localAddr := fabricAddr(net.JoinHostPort(lhost, strconv.Itoa(f.nextConn)))
	a, b := newMemConnPair(localAddr, fabricAddr(net.JoinHostPort(host, strconv.Itoa(port))))
	select {
	case l.conns <- b:
		return a, nil
	default:
		return nil, &verbs.RejectError{}
	}
}

// splitAddr parses "host:port".
func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: address %q: %v", verbs.ErrInvalid, addr, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%w: address %q: bad port", verbs.ErrInvalid, addr)
	}
	return host, port, nil
}

// fabricListener is a net.Listener on a Fabric.
type fabricListener struct {
	f     *Fabric
	key   string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *fabricListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close unbinds the address and refuses connections not yet accepted.
func (l *fabricListener) Close() error {
	l.once.Do(func() {
		l.f.mu.Lock()
		delete(l.f.listeners, l.key)
		l.f.mu.Unlock()
		close(l.done)
		for {
			select {
			case c := <-l.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *fabricListener) Addr() net.Addr { return fabricAddr(l.key) }
