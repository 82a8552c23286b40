package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Client talks to any node's control API. Safe for concurrent use.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client for the API at addr ("host:port" or a full
// http:// or https:// URL). With tlsConf the scheme defaults to https.
func NewClient(addr string, tlsConf *tls.Config) *Client {
	base := strings.TrimRight(addr, "/")
	if !strings.Contains(base, "://") {
		if tlsConf != nil {
			base = "https://" + base
		} else {
			base = "http://" + base
		}
	}
	tr := &http.Transport{TLSClientConfig: tlsConf, MaxIdleConnsPerHost: 64}
	return &Client{base: base, hc: &http.Client{Transport: tr}}
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// do sends in (JSON, nil for none) and decodes the response into out
// (nil to discard). Non-2xx answers are *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
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
func (c *Client) CreateVolume(ctx context.Context, r CreateVolumeRequest) (catalog.Volume, error) {
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

// DeleteVolume deletes a volume (its owner then removes the data).
func (c *Client) DeleteVolume(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/v1/volumes/"+url.PathEscape(name), nil, nil)
}

// CreateSubsystem creates a subsystem.
func (c *Client) CreateSubsystem(ctx context.Context, r CreateSubsystemRequest) (catalog.Subsystem, error) {
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
