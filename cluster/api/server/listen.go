package server

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Listener is a running HTTP(S) server for the API.
type Listener struct {
	ln  net.Listener
	srv *http.Server
}

// Listen binds addr and serves h on it (TLS when tlsConf is set) until
// Close. Server-level errors (failed TLS handshakes, malformed requests)
// go to log at warn level; nil means slog.Default().
func Listen(addr string, tlsConf *tls.Config, h http.Handler, log *slog.Logger) (*Listener, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	l := &Listener{ln: ln, srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.With("component", "api").Handler(), slog.LevelWarn),
	}}
	go l.srv.Serve(ln)
	return l, nil
}

// Addr returns the bound host:port.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Close stops accepting, waits up to 5 s for requests in progress, then
// closes the rest.
func (l *Listener) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return l.srv.Close()
	}
	return err
}
