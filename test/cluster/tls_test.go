package cluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/test/testproc"
)

// testCA is a throwaway certificate authority (ECDSA P-256, valid for an
// hour) whose files live in a test's temporary directory.
type testCA struct {
	dir    string
	name   string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	CAFile string // PEM of the CA certificate
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &testCA{dir: dir, name: name, cert: cert, key: key, CAFile: filepath.Join(dir, name+"-ca.pem")}
	writePEM(t, ca.CAFile, "CERTIFICATE", der)
	return ca
}

func serial(t *testing.T) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// issue signs a leaf certificate for cn with the given extended key
// usages (and 127.0.0.1 as IP SAN), returning its certificate and key
// files.
func (ca *testCA) issue(t *testing.T, cn string, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	return ca.issueURI(t, cn, "", usage...)
}

// issueURI is issue with a URI SAN (the API's role convention,
// rdmablk://ROLE/NAME; "" for none).
func (ca *testCA) issueURI(t *testing.T, cn, uri string, usage ...x509.ExtKeyUsage) (certFile, keyFile string) {
	t.Helper()
	var uris []*url.URL
	if uri != "" {
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, u)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		URIs:         uris,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(ca.dir, ca.name+"-"+cn+".pem")
	keyFile = filepath.Join(ca.dir, ca.name+"-"+cn+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kder)
	return certFile, keyFile
}

// refused reports whether err means the API did not serve the request: a
// transport / handshake failure, or the 400 a TLS server answers to plain
// HTTP. Any other answer (even an API error) means it was served.
func refused(err error) bool {
	if err == nil {
		return false
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status == http.StatusBadRequest && ae.Code == api.CodeInternal
	}
	return true
}

// TestControlAPITLS: the control API over TLS with client certificates
// required. Members join, register and forward writes to the leader over
// HTTPS with their node certificate; an admin certificate from the same
// CA works through any node, also with the rdmablk CLI's --tls-* flags;
// no certificate, a certificate from another CA, a client that does not
// trust the server's CA, and plain HTTP are all refused.
func TestControlAPITLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir, "cluster")
	adminCert, adminKey := ca.issueURI(t, "admin", "rdmablk://admin/alice", x509.ExtKeyUsageClientAuth)
	readerCert, readerKey := ca.issueURI(t, "reader", "rdmablk://reader/grafana", x509.ExtKeyUsageClientAuth)
	noRoleCert, noRoleKey := ca.issue(t, "norole", x509.ExtKeyUsageClientAuth)
	rogue := newTestCA(t, dir, "rogue")
	rogueCert, rogueKey := rogue.issue(t, "admin", x509.ExtKeyUsageClientAuth)

	// Each member has its own node certificate (rdmablk://node/<id>): the
	// API, forwarding, join and raft (mutual TLS) all use it, and no node
	// token is configured, so the certificates are the only identities.
	perNode := func(id string) (*tls.Config, *tls.Config) {
		cert, key := ca.issueURI(t, id, "rdmablk://node/"+id, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
		srv, err := server.ServerTLS(cert, key, ca.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		cli, err := api.ClientTLS(ca.CAFile, cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return srv, cli
	}
	ms := startClusterTLS(t, 2, &apiTLS{perNode: perNode, noToken: true})
	lead := leaderOf(t, ms)
	follower := ms[0]
	if follower == lead {
		follower = ms[1]
	}
	addr := follower.a.APIAddr()

	client := func(caFile, cert, key string) *api.Client {
		t.Helper()
		tc, err := api.ClientTLS(caFile, cert, key)
		if err != nil {
			t.Fatal(err)
		}
		c := api.NewClient(addr, tc)
		t.Cleanup(c.Close)
		return c
	}

	// A valid admin certificate: a write through the follower is
	// forwarded to the leader (over TLS, with the node certificate).
	admin := client(ca.CAFile, adminCert, adminKey)
	if _, err := admin.Health(ctx(t)); err != nil {
		t.Fatalf("health with a valid client certificate: %v", err)
	}
	v, err := admin.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "tls-vol", Size: 1 << 20, Node: lead.id})
	if err != nil {
		t.Fatalf("create through the follower: %v", err)
	}
	if v.Name != "tls-vol" || v.Node != lead.id {
		t.Fatalf("created %+v", v)
	}
	if _, err := admin.Volume(ctx(t), "nope"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("API errors still JSON over TLS: %v", err)
	}

	// Roles: a reader reads but does not write; a certificate from the CA
	// without a role does neither; neither an admin nor a reader may drive
	// the node-only endpoints (join, remove, internal/apply).
	reader := client(ca.CAFile, readerCert, readerKey)
	if _, err := reader.Volumes(ctx(t)); err != nil {
		t.Fatalf("reader list: %v", err)
	}
	if _, err := reader.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "by-reader", Size: 1 << 20}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("reader create: %v, want 403 forbidden", err)
	}
	noRole := client(ca.CAFile, noRoleCert, noRoleKey)
	if _, err := noRole.Volumes(ctx(t)); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("certificate without a role, list: %v, want 403", err)
	}
	for name, c := range map[string]*api.Client{"admin": admin, "reader": reader, "no role": noRole} {
		err := c.Join(ctx(t), catalog.Node{ID: "evil", RaftAddr: "127.0.0.1:1", APIAddr: "127.0.0.1:1"})
		if ae := (*api.Error)(nil); !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, "node role") {
			t.Errorf("%s join: %v, want 403 naming the node role", name, err)
		}
		if err := c.Remove(ctx(t), follower.id); !errors.Is(err, api.ErrForbidden) {
			t.Errorf("%s remove: %v, want 403", name, err)
		}
	}
	if st, err := admin.Status(ctx(t)); err != nil || len(st.Members) != 2 {
		t.Fatalf("membership changed: %+v %v", st, err)
	} else {
		for _, m := range st.Members {
			if m.State != "Leader" && m.State != "Follower" {
				t.Errorf("member %s state %q (raft over TLS)", m.ID, m.State)
			}
		}
	}

	// Go's client withholds a certificate that does not chain to a CA the
	// server names; this one presents the rogue certificate regardless, so
	// that the server's verification is what refuses it.
	pushy, err := api.ClientTLS(ca.CAFile, rogueCert, rogueKey)
	if err != nil {
		t.Fatal(err)
	}
	pushy.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &pushy.Certificates[0], nil
	}
	for _, tc := range []struct {
		name string
		c    *api.Client
	}{
		{"no client certificate", client(ca.CAFile, "", "")},
		{"certificate from another CA", client(ca.CAFile, rogueCert, rogueKey)},
		{"certificate from another CA, presented anyway", api.NewClient(addr, pushy)},
		{"server CA not trusted", client("", adminCert, adminKey)},
		{"plain HTTP", api.NewClient(addr, nil)},
	} {

		if _, err := tc.c.Health(ctx(t)); !refused(err) {
			t.Errorf("%s: health not refused: %v", tc.name, err)
		}
		if _, err := tc.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "intruder", Size: 1 << 20}); !refused(err) {
			t.Errorf("%s: create not refused: %v", tc.name, err)
		}
		tc.c.Close()
	}
	if _, err := admin.Volume(ctx(t), "intruder"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("a refused client created a volume: %v", err)
	}

	// The same through the rdmablk CLI's flags.
	if testing.Short() {
		return
	}
	cli := testproc.BuildGoBinary(t, "github.com/rdmablk/rdmablk/cmd/rdmablk")
	run := func(args ...string) ([]byte, error) {
		t.Helper()
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, cli, append(args, "--api", addr, "--json")...)
		cmd.Env = append(os.Environ(), "RDMABLK_API=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			err = errors.Join(err, errors.New(stderr.String()))
		}
		return out, err
	}
	good := []string{"--tls-ca", ca.CAFile, "--tls-cert", adminCert, "--tls-key", adminKey}
	out, err := run(append([]string{"volume", "create", "cli-vol", "--size", "1M", "--node", lead.id}, good...)...)
	if err != nil {
		t.Fatalf("rdmablk volume create with --tls-*: %v", err)
	}
	var created catalog.Volume
	if err := json.Unmarshal(out, &created); err != nil || created.Name != "cli-vol" || created.Size != 1<<20 {
		t.Fatalf("rdmablk volume create: %v %s", err, out)
	}
	// Reads are served by the follower, which may lag the leader a little.
	eventually(t, 20*time.Second, "rdmablk volume list (through the follower) shows both volumes", func() bool {
		out, err := run(append([]string{"volume", "list"}, good...)...)
		if err != nil {
			t.Fatalf("rdmablk volume list with --tls-*: %v", err)
		}
		var listed []catalog.Volume
		if err := json.Unmarshal(out, &listed); err != nil {
			t.Fatalf("rdmablk volume list: %v %s", err, out)
		}
		var names []string
		for _, v := range listed {
			names = append(names, v.Name)
		}
		return slices.Contains(names, "tls-vol") && slices.Contains(names, "cli-vol")
	})
	for name, flags := range map[string][]string{
		"plain HTTP":                  nil,
		"no client certificate":       {"--tls-ca", ca.CAFile},
		"certificate from another CA": {"--tls-ca", ca.CAFile, "--tls-cert", rogueCert, "--tls-key", rogueKey},
	} {
		if out, err := run(append([]string{"volume", "list"}, flags...)...); err == nil {
			t.Errorf("rdmablk volume list, %s: not refused: %s", name, out)
		}
	}
}
