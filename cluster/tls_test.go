package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// pki is a throwaway CA that issues certificates with a URI SAN.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	p := &pki{cert: c, key: key, pool: x509.NewCertPool()}
	p.pool.AddCert(c)
	return p
}

func (p *pki) issue(t *testing.T, uri string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse(uri)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: uri},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, URIs: []*url.URL{u}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.cert, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (p *pki) configs(c tls.Certificate) (server, client *tls.Config) {
	return &tls.Config{Certificates: []tls.Certificate{c}, ClientCAs: p.pool, ClientAuth: tls.RequireAndVerifyClientCert},
		&tls.Config{Certificates: []tls.Certificate{c}, RootCAs: p.pool}
}

func newTLSTestLayer(t *testing.T, p *pki, uri string) raft.StreamLayer {
	t.Helper()
	inner, err := TCPLayer("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := p.configs(p.issue(t, uri))
	l, err := TLSLayer(inner, srv, cli)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestTLSLayer: two node certificates talk; an admin certificate from the
// same CA can neither dial a node nor be accepted by one; a plain TCP
// peer is dropped without ending Accept.
func TestTLSLayer(t *testing.T) {
	p := newPKI(t)
	a := newTLSTestLayer(t, p, "rdmablk://node/n1")
	b := newTLSTestLayer(t, p, "rdmablk://node/n2")
	admin := newTLSTestLayer(t, p, "rdmablk://admin/alice")

	// Like raft, read from every accepted connection on its own
	// goroutine; only connections whose handshake succeeds deliver bytes.
	accepted := make(chan []byte, 4)
	serve := func(l raft.StreamLayer) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 5)
				if _, err := io.ReadFull(c, buf); err == nil {
					accepted <- buf
				}
			}()
		}
	}
	go serve(a)
	go serve(admin)

	// TLS 1.3 lets the client finish its side before the server has
	// checked the client's certificate: the refusal then arrives as an
	// alert on the first read.
	if c, err := admin.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second); err == nil {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("an admin certificate dialled a node's raft: read %v", err)
		}
		c.Close()
	}
	if _, err := b.Dial(raft.ServerAddress(admin.Addr().String()), 5*time.Second); err == nil {
		t.Fatal("a node accepted an admin certificate as raft peer")
	}
	plain, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	plain.Write([]byte("not tls\r\n\r\n"))
	io.ReadAll(plain) // the handshake fails and the connection closes
	plain.Close()

	c, err := b.Dial(raft.ServerAddress(a.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatalf("node to node: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if buf := <-accepted; string(buf) != "hello" {
		t.Fatalf("read %q", buf)
	}
	select {
	case extra := <-accepted:
		t.Fatalf("a refused peer delivered %q", extra)
	default:
	}
}
