package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Role is a set of powers over the API (a bit set).
type Role uint8

// Roles. Every role that is not RoleNone includes RoleReader.
const (
	RoleNone Role = 0
	// RoleReader: GET endpoints (status, volumes, subsystems, metrics).
	RoleReader Role = 1 << iota
	// RoleAdmin: the admin writes (volumes, subsystems, snapshot).
	RoleAdmin
	// RoleNode: the node-only endpoints (internal/*, join, remove) and
	// forwarding writes on an authorised caller's behalf.
	RoleNode
)

// RoleAll is every role (insecure mode).
const RoleAll = RoleReader | RoleAdmin | RoleNode

func (r Role) String() string {
	var s []string
	for _, x := range []struct {
		r Role
		n string
	}{{RoleNode, "node"}, {RoleAdmin, "admin"}, {RoleReader, "reader"}} {
		if r&x.r != 0 {
			s = append(s, x.n)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

// ParseRole parses "node", "admin" or "reader". Node and admin include
// reader.
func ParseRole(s string) (Role, error) {
	switch s {
	case "node":
		return RoleNode | RoleReader, nil
	case "admin":
		return RoleAdmin | RoleReader, nil
	case "reader":
		return RoleReader, nil
	}
	return RoleNone, fmt.Errorf("role %q: want node, admin or reader", s)
}

// Principal is the identity behind a request.
type Principal struct {
	// Name names it in logs and errors ("cert:CN", "token:alice", "anonymous").
	Name  string
	Roles Role
	// NodeID is the node a node certificate names (rdmablk://node/<id>);
	// "" for tokens and other identities.
	NodeID string
}

type principalKey struct{}

// principal returns the request's principal (set by the auth wrapper).
func principal(r *http.Request) Principal {
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}

// CertURIScheme is the URI SAN scheme that gives a client certificate its
// role: rdmablk://node/<node-id>, rdmablk://admin/<name> or
// rdmablk://reader/<name>. A certificate without one has no role.
const CertURIScheme = "rdmablk"

// CertRole returns the roles a verified client certificate's URI SANs
// grant, and the node ID of a node certificate.
func CertRole(uris []*url.URL) (Role, string, string) {
	var roles Role
	var nodeID, name string
	for _, u := range uris {
		if u.Scheme != CertURIScheme {
			continue
		}
		r, err := ParseRole(u.Host)
		n := strings.TrimPrefix(u.Path, "/")
		if err != nil || !catalog.ValidName(n) {
			continue
		}
		roles |= r
		if r&RoleNode != 0 {
			nodeID = n
		}
		if name == "" {
			name = u.Host + "/" + n
		}
	}
	return roles, nodeID, name
}

// Auth decides who a request comes from and what it may do.
type Auth struct {
	tokens map[[32]byte]Principal
	// open are the roles of a request that presents no identity.
	open Role
}

// TokenEntry is one bearer token, stored as its SHA-256.
type TokenEntry struct {
	Role Role
	Name string
	Hash [32]byte
}

// HashToken returns the stored form of a bearer token: "sha256:<hex>".
func HashToken(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return "sha256:" + hex.EncodeToString(h[:])
}

// NewAuth returns an Auth that knows tokens and grants open to requests
// without an identity (RoleNone: every endpoint but /v1/health needs one).
func NewAuth(tokens []TokenEntry, open Role) *Auth {
	a := &Auth{tokens: map[[32]byte]Principal{}, open: open}
	for _, t := range tokens {
		a.tokens[t.Hash] = Principal{Name: "token:" + t.Name, Roles: t.Role}
	}
	return a
}

// LoadTokens reads a tokens file: one token a line, "ROLE NAME sha256:HEX"
// (ROLE node, admin or reader; the hash is HashToken of the secret, which
// the file never holds); blank lines and lines starting with # are
// skipped. Errors name the file and line.
func LoadTokens(file string) ([]TokenEntry, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("api tokens: %w", err)
	}
	defer f.Close()
	var out []TokenEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return nil, fmt.Errorf("api tokens: %s:%d: want \"ROLE NAME sha256:HEX\"", file, n)
		}
		r, err := ParseRole(fs[0])
		if err != nil {
			return nil, fmt.Errorf("api tokens: %s:%d: %v", file, n, err)
		}
		hx, ok := strings.CutPrefix(fs[2], "sha256:")
		b, err := hex.DecodeString(hx)
		if !ok || err != nil || len(b) != 32 {
			return nil, fmt.Errorf("api tokens: %s:%d: hash: want sha256: and 64 hex digits (rdmablk cluster token create prints it)", file, n)
		}
		e := TokenEntry{Role: r, Name: fs[1]}
		copy(e.Hash[:], b)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("api tokens: %s: %w", file, err)
	}
	return out, nil
}

// identify returns the principal of r, or an error when r presents an
// identity that does not check out (an unknown token).
func (a *Auth) identify(r *http.Request) (Principal, error) {
	p := Principal{Name: "anonymous", Roles: a.open}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		c := r.TLS.PeerCertificates[0]
		roles, nodeID, name := CertRole(c.URIs)
		if name == "" {
			name = c.Subject.CommonName
		}
		p = Principal{Name: "cert:" + name, Roles: roles | a.open, NodeID: nodeID}
	}
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return p, fmt.Errorf("%w: Authorization header: want \"Bearer <token>\"", errUnauthenticated)
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		tp, found := a.lookup(sum)
		if !found {
			return p, fmt.Errorf("%w: unknown bearer token (neither in the tokens file nor the node token)", errUnauthenticated)
		}
		tp.Roles |= p.Roles
		if tp.NodeID == "" {
			tp.NodeID = p.NodeID
		}
		p = tp
	}
	return p, nil
}

// lookup finds a token's principal; the comparison of the hash is
// constant time.
func (a *Auth) lookup(sum [32]byte) (Principal, bool) {
	var hit Principal
	found := false
	for h, p := range a.tokens {
		if subtle.ConstantTimeCompare(h[:], sum[:]) == 1 {
			hit, found = p, true
		}
	}
	return hit, found
}

// need describes the role an endpoint needs for error messages.
func need(r Role) string {
	switch {
	case r&RoleNode != 0:
		return "the node role (a node certificate with URI SAN rdmablk://node/<id>, or the cluster's node token)"
	case r&RoleAdmin != 0:
		return "the admin role (an admin certificate with URI SAN rdmablk://admin/<name>, or an admin token)"
	}
	return "the reader role (a certificate with URI SAN rdmablk://reader/<name> or any other role, or a token)"
}

// guard wraps h so that it runs only for principals with role want. A
// write that a node forwards on behalf of a caller it authorised carries
// that caller's roles in callerRolesHeader, which is believed only from a
// node.
func (s *Server) guard(want Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := s.o.Auth.identify(r)
		if err != nil {
			writeError(w, fmt.Errorf("%w; %s %s needs %s", err, r.Method, r.URL.Path, need(want)))
			return
		}
		if p.Roles&RoleNode != 0 && r.Header.Get(fwdHeader) != "" {
			if v := r.Header.Get(callerRolesHeader); v != "" {
				var fr uint8
				if _, err := fmt.Sscan(v, &fr); err == nil {
					p = Principal{Name: p.Name + " for " + r.Header.Get(callerNameHeader), Roles: Role(fr)}
				}
			}
		}
		if p.Roles&want == 0 {
			if p.Name == "anonymous" { // presented no identity at all
				writeError(w, fmt.Errorf("%w: %s %s needs %s", errUnauthenticated, r.Method, r.URL.Path, need(want)))
			} else {
				writeError(w, fmt.Errorf("%w: %s (roles: %s) may not %s %s: it needs %s", errForbidden, p.Name, p.Roles, r.Method, r.URL.Path, need(want)))
			}
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}
