package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Client talks to a cluster's control API. Safe for concurrent use.
type Client struct {
	bases []string // one per node address given; tried in turn
	hc    *http.Client
	token string
	next  atomic.Uint32 // index into bases of the node to try first
}

// NewClient returns a client for the API at addr: "host:port" or a full
// http:// or https:// URL, or several of them separated by commas (any
// node of the cluster; the client moves to the next when one does not
// answer). With tlsConf the scheme defaults to https.
func NewClient(addr string, tlsConf *tls.Config) *Client {
	var bases []string
	for _, a := range strings.Split(addr, ",") {
		base := strings.TrimRight(strings.TrimSpace(a), "/")
		if base == "" {
			continue
		}
		if !strings.Contains(base, "://") {
			if tlsConf != nil {
				base = "https://" + base
			} else {
				base = "http://" + base
			}
		}
		bases = append(bases, base)
	}
	if len(bases) == 0 {
		bases = []string{"http://127.0.0.1:7420"}
	}
	tr := &http.Transport{TLSClientConfig: tlsConf, MaxIdleConnsPerHost: 64}
	return &Client{bases: bases, hc: &http.Client{Transport: tr}}
}

// SetToken makes the client present tok as a bearer token (the API's
// tokens file holds its hash). Call before the first request.
func (c *Client) SetToken(tok string) { c.token = strings.TrimSpace(tok) }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Retry backoff bounds.
const (
	retryMin = 20 * time.Millisecond
	retryMax = time.Second
)

// do sends in (JSON, nil for none) and decodes the response into out
// (nil to discard). Non-2xx answers are *Error. While the cluster has no
// leader, the leader moved (503 not_leader / no_leader), the outcome is
// unknown (503 outcome_unknown) or the node does not answer, it retries
// with backoff (on the next node address, if several) until ctx ends;
// see the package doc for why that is safe.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
	}
	delay := retryMin
	unknown := false // an earlier attempt may have taken effect
	for {
		i := int(c.next.Load()) % len(c.bases)
		err := c.once(ctx, c.bases[i], method, path, body, out)
		if unknown && ownEffect(method, path, err) {
			return nil
		}
		if !c.retry(err) || ctx.Err() != nil || path == "/v1/health" {
			return err
		}
		var ue *Error
		if errors.As(err, &ue) && ue.Code == CodeUnknown ||
			!errors.As(err, &ue) && method != http.MethodGet && !errors.Is(err, syscall.ECONNREFUSED) {
			unknown = true
		}
		// Try the next node: this one did not answer, or it knows no
		// leader (it may be the one cut off from the others).
		c.next.CompareAndSwap(uint32(i), uint32(i+1))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}

// ownEffect reports whether err, answering a retry of a write whose
// earlier attempt may have taken effect, is that attempt's effect: a
// delete that finds nothing to delete, a host added twice. (Creates need
// no such rule: their request ID makes the retry answer the first
// attempt's result.)
func ownEffect(method, path string, err error) bool {
	var ae *Error
	if !errors.As(err, &ae) {
		return false
	}
	switch {
	case method == http.MethodDelete && ae.Code == CodeNotFound:
		return true
	case method == http.MethodPost && strings.HasSuffix(path, "/hosts") && ae.Code == CodeExists:
		return true
	}
	return false
}

// retry reports whether err is worth another attempt.
func (c *Client) retry(err error) bool {
	if err == nil {
		return false
	}
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Code == CodeNotLeader || ae.Code == CodeNoLeader || ae.Code == CodeUnknown
	}
	// The node is down or restarting (not: a TLS or certificate failure,
	// which a retry does not mend).
	var ne net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		(errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

func (c *Client) once(ctx context.Context, base, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return DecodeError(resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("api: %s %s: decoding response: %w", method, path, err)
		}
	}
	return nil
}

// NewRequestID returns a fresh random request ID for the create requests.
func NewRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Health is GET /v1/health.
func (c *Client) Health(ctx context.Context) (HealthResponse, error) {
	var h HealthResponse
	return h, c.do(ctx, http.MethodGet, "/v1/health", nil, &h)
}

// Status is GET /v1/cluster/status.
func (c *Client) Status(ctx context.Context) (StatusResponse, error) {
	var s StatusResponse
	return s, c.do(ctx, http.MethodGet, "/v1/cluster/status", nil, &s)
}

// Join asks the cluster to add n as a voter and register it.
func (c *Client) Join(ctx context.Context, n catalog.Node) error {
	return c.do(ctx, http.MethodPost, "/v1/cluster/join", JoinRequest{Node: n}, nil)
}

// Remove removes node id from the cluster (it must own nothing).
func (c *Client) Remove(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/v1/cluster/remove", RemoveRequest{ID: id}, nil)
}

// Snapshot makes the node take a raft snapshot.
func (c *Client) Snapshot(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/cluster/snapshot", nil, nil)
}

// CreateVolume creates a volume.
// A RequestID is generated when r has none, so that the client's own
// retries are idempotent.
func (c *Client) CreateVolume(ctx context.Context, r CreateVolumeRequest) (catalog.Volume, error) {
	if r.RequestID == "" {
		r.RequestID = NewRequestID()
	}
	var v catalog.Volume
	return v, c.do(ctx, http.MethodPost, "/v1/volumes", r, &v)
}

// Volumes lists the volumes (tombstones included).
func (c *Client) Volumes(ctx context.Context) ([]catalog.Volume, error) {
	var vs []catalog.Volume
	return vs, c.do(ctx, http.MethodGet, "/v1/volumes", nil, &vs)
}

// Volume gets one volume.
func (c *Client) Volume(ctx context.Context, name string) (catalog.Volume, error) {
	var v catalog.Volume
	return v, c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(name), nil, &v)
}

// ResizeVolume grows a volume to size bytes.
func (c *Client) ResizeVolume(ctx context.Context, name string, size int64) (catalog.Volume, error) {
	var v catalog.Volume
	return v, c.do(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(name)+"/resize", ResizeVolumeRequest{Size: size}, &v)
}

// RepairVolume clears a volume's error state so that its owner retries
// opening it now.
func (c *Client) RepairVolume(ctx context.Context, name string) (catalog.Volume, error) {
	var v catalog.Volume
	return v, c.do(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(name)+"/repair", nil, &v)
}

// DeleteVolume deletes a volume (its owner then removes the data).
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name), nil, nil)
}

// VolumeStatus is GET /v1/volumes/{name}/status: the volume's replicas,
// their states, the owner, and rebuild progress with its ETA.
func (c *Client) VolumeStatus(ctx context.Context, name string) (VolumeStatus, error) {
	var st VolumeStatus
	return st, c.do(ctx, http.MethodGet, "/v1/volumes/"+url.PathEscape(name)+"/status", nil, &st)
}

// AddReplica gives volume name a new copy on node (it joins syncing and
// is rebuilt in full by the owner). A retry after an unknown outcome
// answers the replica its first attempt added.
func (c *Client) AddReplica(ctx context.Context, name, node string) (catalog.Volume, error) {
	var v catalog.Volume
	return v, c.do(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(name)+"/replicas", AddReplicaRequest{Node: node}, &v)
}

// RemoveReplica removes volume name's copy on node (never the owner's,
// never the last in-sync one); the volume's desired replica count drops
// with it.
func (c *Client) RemoveReplica(ctx context.Context, name, node string) error {
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name)+"/replicas/"+url.PathEscape(node), nil, nil)
}

// Failover moves volume name's ownership to node to (an in-sync
// replica; "" lets the leader choose one on a reachable node). Hosts see
// the new owner's paths become ANA-optimized and the old owner's
// inaccessible. Moving to the current owner is a no-op, so a retry is
// safe.
func (c *Client) Failover(ctx context.Context, name, to string) (catalog.Volume, error) {
	var v catalog.Volume
	return v, c.do(ctx, http.MethodPost, "/v1/volumes/"+url.PathEscape(name)+"/failover", FailoverRequest{To: to}, &v)
}

// CreateSubsystem creates a subsystem.
// A RequestID is generated when r has none.
func (c *Client) CreateSubsystem(ctx context.Context, r CreateSubsystemRequest) (catalog.Subsystem, error) {
	if r.RequestID == "" {
		r.RequestID = NewRequestID()
	}
	var s catalog.Subsystem
	return s, c.do(ctx, http.MethodPost, "/v1/subsystems", r, &s)
}

// Subsystems lists the subsystems.
func (c *Client) Subsystems(ctx context.Context) ([]catalog.Subsystem, error) {
	var ss []catalog.Subsystem
	return ss, c.do(ctx, http.MethodGet, "/v1/subsystems", nil, &ss)
}

// Subsystem gets one subsystem.
func (c *Client) Subsystem(ctx context.Context, nqn string) (catalog.Subsystem, error) {
	var s catalog.Subsystem
	return s, c.do(ctx, http.MethodGet, "/v1/subsystems/"+url.PathEscape(nqn), nil, &s)
}

// DeleteSubsystem deletes a subsystem.
func (c *Client) DeleteSubsystem(ctx context.Context, nqn string) error {
	return c.do(ctx, http.MethodDelete, "/v1/subsystems/"+url.PathEscape(nqn), nil, nil)
}

// AddNamespace exports volume as namespace nsid (0 = lowest free) of nqn.
func (c *Client) AddNamespace(ctx context.Context, nqn string, nsid uint32, volume string) (uint32, error) {
	var r AddNamespaceResponse
	err := c.do(ctx, http.MethodPost, "/v1/subsystems/"+url.PathEscape(nqn)+"/namespaces", AddNamespaceRequest{NSID: nsid, Volume: volume}, &r)
	return r.NSID, err
}

// RemoveNamespace detaches namespace nsid of nqn.
func (c *Client) RemoveNamespace(ctx context.Context, nqn string, nsid uint32) error {
	return c.do(ctx, http.MethodDelete, "/v1/subsystems/"+url.PathEscape(nqn)+"/namespaces/"+strconv.FormatUint(uint64(nsid), 10), nil, nil)
}

// AddHost allows host to connect to nqn.
func (c *Client) AddHost(ctx context.Context, nqn, host string) error {
	return c.do(ctx, http.MethodPost, "/v1/subsystems/"+url.PathEscape(nqn)+"/hosts", HostRequest{Host: host}, nil)
}

// RemoveHost disallows host.
func (c *Client) RemoveHost(ctx context.Context, nqn, host string) error {
	return c.do(ctx, http.MethodDelete, "/v1/subsystems/"+url.PathEscape(nqn)+"/hosts/"+url.PathEscape(host), nil, nil)
}

// SetAllowAnyHost sets whether any host may connect to nqn.
func (c *Client) SetAllowAnyHost(ctx context.Context, nqn string, allow bool) error {
	return c.do(ctx, http.MethodPut, "/v1/subsystems/"+url.PathEscape(nqn)+"/allow-any", AllowAnyRequest{Allow: allow}, nil)
}

// SetANAState records the ANA state of nqn's group on node.
func (c *Client) SetANAState(ctx context.Context, nqn, node, state string) error {
	return c.do(ctx, http.MethodPut, "/v1/subsystems/"+url.PathEscape(nqn)+"/ana", ANARequest{Node: node, State: state}, nil)
}
