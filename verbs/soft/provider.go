package soft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/rdmablk/rdmablk/verbs"
)

// Options configure a Provider.
type Options struct {
	// Profile is the device capability profile; the zero value means
	// ProfileDefault.
	Profile Profile
	// Fabric, when non-nil, is the in-process network Listen and Resolve
	// use; nil means real TCP sockets.
	Fabric *Fabric
	// Tune, when non-nil, adjusts the profile's attributes before the
	// device is created (for example MaxQPRdAtom = 1 in a test).
	Tune func(*verbs.DeviceAttr)
	// DeviceName overrides the profile's device name.
	DeviceName string
	// Logger receives the provider's own events (accept errors a listener
	// retried); nil → slog.Default().
	Logger *slog.Logger
	// listen replaces net.Listen in tests (injected accept errors).
	listen func(network, addr string) (net.Listener, error)
}

// Provider is the soft verbs provider: one emulated RDMA device plus RDMA
// connection management over TCP or a Fabric. It is safe for concurrent use.
type Provider struct {
	fabric *Fabric
	dev    *device
	log    *slog.Logger
	listen func(network, addr string) (net.Listener, error)

	mu        sync.Mutex // guards closed, listeners, ids
	closed    bool
	listeners map[*listener]struct{}
	ids       map[*connID]struct{}
	wg        sync.WaitGroup // every goroutine the provider starts
}

var _ verbs.Provider = (*Provider)(nil)

// New creates a provider with one device built from opts.Profile.
func New(opts Options) *Provider {
	prof := opts.Profile
	if prof.Name == "" {
		prof = ProfileDefault
	}
	attr := prof.Attr
	if opts.Tune != nil {
		opts.Tune(&attr)
	}
	name := opts.DeviceName
	if name == "" {
		name = prof.DeviceName
	}
	p := &Provider{
		fabric:    opts.Fabric,
		log:       opts.Logger,
		listen:    opts.listen,
		listeners: make(map[*listener]struct{}),
		ids:       make(map[*connID]struct{}),
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.listen == nil {
		p.listen = net.Listen
	}
	p.dev = newDevice(p, name, attr, prof.MaxMRPages)
	return p
}

// Name returns "soft".
func (p *Provider) Name() string { return "soft" }

// Devices returns the provider's single device, or verbs.ErrNoDevice after
// Close.
func (p *Provider) Devices() ([]verbs.Device, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("%w: soft provider closed", verbs.ErrNoDevice)
	}
	return []verbs.Device{p.dev}, nil
}

// Listen binds addr (on the Fabric, or a TCP socket) and returns a listener
// whose connection requests are bound to the provider's device.
func (p *Provider) Listen(addr string, opts verbs.ListenOptions) (verbs.Listener, error) {
	if opts.Backlog < 0 {
		return nil, fmt.Errorf("%w: negative backlog", verbs.ErrInvalid)
	}
	var ln net.Listener
	var err error
	if p.fabric != nil {
		ln, err = p.fabric.listen(addr)
	} else {
		ln, err = p.listen("tcp", addr)
		if err != nil {
			err = fmt.Errorf("%w: listen %s: %v", verbs.ErrInvalid, addr, err)
		}
	}
	if err != nil {
		return nil, err
	}
	backlog := opts.Backlog
	if backlog == 0 {
		backlog = 128
	}
	l := newListener(p, ln, backlog)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return nil, fmt.Errorf("%w: soft provider closed", verbs.ErrDeviceRemoved)
	}
	p.listeners[l] = struct{}{}
	p.mu.Unlock()
	if !l.spawn(l.acceptLoop) {
		l.Close()
		return nil, fmt.Errorf("%w: soft provider closed", verbs.ErrDeviceRemoved)
	}
	return l, nil
}

// Resolve creates an active ID bound to the device. Over TCP the host name
// is resolved (failure: verbs.ErrUnreachable); on a Fabric any well-formed
// "host:port" resolves, and a missing listener shows at Connect.
func (p *Provider) Resolve(ctx context.Context, addr string, opts verbs.ResolveOptions) (verbs.ConnID, error) {
	host, _, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	if p.fabric == nil && net.ParseIP(host) == nil {
		if _, err := net.DefaultResolver.LookupIPAddr(ctx, host); err != nil {
			return nil, fmt.Errorf("%w: resolve %s: %v", verbs.ErrUnreachable, addr, err)
		}
	}
	id := newConnID(p, true)
	id.raddr = addr
	id.laddr = opts.LocalAddr
	if err := p.addID(id); err != nil {
		return nil, err
	}
	return id, nil
}

// Close removes the device: listeners close, every connection ends with
// verbs.ErrDeviceRemoved (peers see the link drop), and Close waits for all
// goroutines of the provider to stop. Objects of the provider return errors
// afterwards. It is idempotent.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	ls := make([]*listener, 0, len(p.listeners))
	for l := range p.listeners {
		ls = append(ls, l)
	}
	ids := make([]*connID, 0, len(p.ids))
	for id := range p.ids {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, id := range ids {
		id.closeWith(verbs.ErrDeviceRemoved, false)
	}
	p.dev.remove()
	p.wg.Wait()
	return nil
}

// spawn runs f on a goroutine tracked by Close. It returns false (and does
// not run f) once the provider is closed.
func (p *Provider) spawn(f func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
	return true
}

func (p *Provider) addID(id *connID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("%w: soft provider closed", verbs.ErrDeviceRemoved)
	}
	p.ids[id] = struct{}{}
	return nil
}

func (p *Provider) removeID(id *connID) {
	p.mu.Lock()
	delete(p.ids, id)
	p.mu.Unlock()
}

func (p *Provider) removeListener(l *listener) {
	p.mu.Lock()
	delete(p.listeners, l)
	p.mu.Unlock()
}

// dial opens the transport connection of an active ID. A refused TCP
// connection or a missing Fabric listener is a non-consumer reject, like
// the CM REJ (invalid service ID) RoCE gives for a port nobody listens on.
func (p *Provider) dial(ctx context.Context, addr, local string) (net.Conn, error) {
	if p.fabric != nil {
		return p.fabric.dial(ctx, addr, local)
	}
	var d net.Dialer
	if local != "" {
		host, port := local, "0"
		if h, pt, err := net.SplitHostPort(local); err == nil {
			host, port = h, pt
		}
		la, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, fmt.Errorf("%w: local address %q: %v", verbs.ErrInvalid, local, err)
		}
		d.LocalAddr = la
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, &verbs.RejectError{}
	}
	return nil, fmt.Errorf("%w: %v", verbs.ErrUnreachable, err)
}
