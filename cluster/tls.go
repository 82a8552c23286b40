package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// TCPLayer is a raft.StreamLayer over plain TCP: it listens on bind and
// advertises advertise ("" = the bound address).
func TCPLayer(bind, advertise string) (raft.StreamLayer, error) {
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	adv := l.Addr()
	if advertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", advertise); err != nil {
			l.Close()
			return nil, fmt.Errorf("%w: raft advertise %q: %v", ErrBadConfig, advertise, err)
		}
	}
	if ta, ok := adv.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		l.Close()
		return nil, fmt.Errorf("%w: raft bind %s is unspecified: set the raft advertise address", ErrBadConfig, bind)
	}
	return &tcpLayer{Listener: l, adv: adv}, nil
}

type tcpLayer struct {
	net.Listener
	adv net.Addr
}

func (t *tcpLayer) Addr() net.Addr { return t.adv }

func (t *tcpLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// TLSLayer runs raft over mutual TLS on top of inner: accepted
// connections complete a handshake with server (which must require and
// verify client certificates) and dialled ones with client (which
// presents this node's certificate and verifies the peer's). Both ends
// must be node certificates: a URI SAN rdmablk://node/<id>, the convention
// of the control API (docs/security.md). An admin certificate from the
// same CA cannot speak raft.
func TLSLayer(inner raft.StreamLayer, server, client *tls.Config) (raft.StreamLayer, error) {
	if server == nil || client == nil || server.ClientAuth != tls.RequireAndVerifyClientCert {
		return nil, fmt.Errorf("%w: raft over TLS needs a server configuration that requires client certificates and a client one", ErrBadConfig)
	}
	server, client = server.Clone(), client.Clone()
	server.VerifyConnection, client.VerifyConnection = verifyNodePeer, verifyNodePeer
	return &tlsLayer{inner: inner, server: server, client: client}, nil
}

// verifyNodePeer fails a raft handshake whose peer is not a node.
func verifyNodePeer(st tls.ConnectionState) error {
	if len(st.PeerCertificates) == 0 || !isNodeCert(st.PeerCertificates[0].URIs) {
		return errors.New("raft: peer certificate has no rdmablk://node/<id> URI SAN")
	}
	return nil
}

type tlsLayer struct {
	inner          raft.StreamLayer
	server, client *tls.Config
}

// handshakeTimeout bounds a raft TLS handshake.
const handshakeTimeout = 10 * time.Second

// Accept returns the next connection as a TLS server connection whose
// handshake runs on its first read or write, on raft's per-connection
// goroutine: a peer that stalls its handshake holds only its own
// connection, never the accept loop. A peer that is not a node fails the
// handshake (VerifyConnection) and raft drops the connection.
func (t *tlsLayer) Accept() (net.Conn, error) {
	c, err := t.inner.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(c, t.server), nil
}

func (t *tlsLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := t.inner.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	cfg := t.client.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(string(addr)); err == nil {
			cfg.ServerName = h
		}
	}
	tc := tls.Client(c, cfg)
	if err := handshake(tc); err != nil {
		c.Close()
		return nil, fmt.Errorf("raft tls to %s: %w", addr, err)
	}
	return tc, nil
}

func handshake(tc *tls.Conn) error {
	tc.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.Handshake(); err != nil {
		return err
	}
	tc.SetDeadline(time.Time{})
	return nil
}

func isNodeCert(uris []*url.URL) bool {
	for _, u := range uris {
		if u.Scheme == "rdmablk" && u.Host == "node" && strings.TrimPrefix(u.Path, "/") != "" {
			return true
		}
	}
	return false
}

func (t *tlsLayer) Close() error   { return t.inner.Close() }
func (t *tlsLayer) Addr() net.Addr { return t.inner.Addr() }
