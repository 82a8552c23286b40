package nbd

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
)

// Export is one named export.
type Export struct {
	// Name is what clients ask for; "" also selects the first export.
	Name string
	// Description is sent on NBD_INFO_DESCRIPTION.
	Description string
	// Backend serves the data. Required.
	Backend Backend
	// ReadOnly refuses writes, trims and zeroes with EPERM.
	ReadOnly bool

	rmw sync.Mutex // serialises read-modify-write of unaligned requests
}

// flags are the export's transmission flags.
func (e *Export) flags() uint16 {
	f := uint16(TFlagHasFlags | TFlagSendFlush | TFlagSendFUA | TFlagSendWriteZeros | TFlagCanMultiConn)
	if _, ok := e.Backend.(Trimmer); ok {
		f |= TFlagSendTrim
	}
	if e.ReadOnly {
		f |= TFlagReadOnly
	}
	return f
}

// blockSizes are the minimum and preferred block sizes advertised.
func (e *Export) blockSizes() (uint32, uint32) {
	bs := e.Backend.BlockSize()
	if bs < 1 {
		bs = 1
	}
	return uint32(bs), uint32(max(bs, preferredBlock))
}

// Options configure a Server.
type Options struct {
	// Exports are served by name. At least one is required.
	Exports []*Export
	// MaxInFlight bounds the requests in flight per connection (read
	// from the socket and not yet answered); the reader waits for a
	// reply when it is reached. Default 128.
	MaxInFlight int
	// Logger receives connection events; default: discard.
	Logger *slog.Logger

	writerGoroutine bool // see reply.go
}

// Stats are counters of a Server.
type Stats struct {
	Conns    int64 // connections open
	InFlight int64 // requests executing
	Requests uint64
	Errors   uint64 // error replies sent
}

// Server serves NBD exports. Its methods are safe for concurrent use.
type Server struct {
	exports []*Export
	maxIn   int
	log     *slog.Logger

	writerGoroutine bool // replies by a goroutine per connection (benchmark)

	mu        sync.Mutex // guards listeners, conns, closed
	listeners map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup

	nConns   atomic.Int64
	inFlight atomic.Int64
	requests atomic.Uint64
	errors   atomic.Uint64
}

// NewServer returns a server for opts.Exports.
func NewServer(opts Options) (*Server, error) {
	if len(opts.Exports) == 0 {
		return nil, errors.New("nbd: no exports")
	}
	for _, e := range opts.Exports {
		if e == nil || e.Backend == nil {
			return nil, errors.New("nbd: export without a backend")
		}
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 128
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		exports: opts.Exports, maxIn: opts.MaxInFlight, log: opts.Logger, writerGoroutine: opts.writerGoroutine,
		listeners: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{},
	}, nil
}

// export finds an export by name ("" selects the first).
func (s *Server) export(name string) *Export {
	for _, e := range s.exports {
		if e.Name == name {
			return e
		}
	}
	if name == "" {
		return s.exports[0]
	}
	return nil
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	return Stats{Conns: s.nConns.Load(), InFlight: s.inFlight.Load(), Requests: s.requests.Load(), Errors: s.errors.Load()}
}

// Serve accepts connections on l until Close (then ErrServerClosed) or an
// accept error. The server owns l from now on.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.listeners, l)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			return err
		}
		go s.ServeConn(c)
	}
}

// track registers c; false when the server is closed (c is closed).
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.nConns.Add(1)
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
	s.nConns.Add(-1)
	s.wg.Done()
}

// ServeConn runs the handshake and then the transmission phase on c until
// the client disconnects, the connection fails or the server closes. It
// closes c.
func (s *Server) ServeConn(c net.Conn) {
	if !s.track(c) {
		return
	}
	defer s.untrack(c)
	e, err := s.negotiate(c)
	if err != nil {
		s.log.Debug("nbd handshake failed", "remote", c.RemoteAddr(), "err", err)
		return
	}
	if e == nil {
		return // aborted
	}
	s.transmit(c, e)
}

// ServeTransmission serves export name on c starting directly in the
// transmission phase (the kernel driver after NBD_SET_SOCK). It closes c
// and returns when the peer disconnects or the server closes.
func (s *Server) ServeTransmission(c net.Conn, name string) error {
	e := s.export(name)
	if e == nil {
		c.Close()
		return ErrNoExport
	}
	if !s.track(c) {
		return ErrServerClosed
	}
	defer s.untrack(c)
	s.transmit(c, e)
	return nil
}

// Close stops the listeners, closes every connection and waits for
// in-flight requests and connection goroutines to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
