package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// rawApply posts a raw catalogue command to internal/apply with token
// ("" = none) and returns the status and error code.
func rawApply(t *testing.T, addr, token string, c catalog.Command) (int, string) {
	t.Helper()
	b, _ := json.Marshal(api.ApplyRequest{Command: c})
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, "http://"+addr+"/v1/internal/apply", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb api.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	return resp.StatusCode, eb.Error.Code
}

// TestVolumeAliasRefused: a second volume naming the first one's file
// (./victim.img for victim.img) cannot be created — not through
// internal/apply without a node identity (401), not with one (403: that
// endpoint takes no creates), not as a command raft would commit (invalid
// path) — and deleting volumes never takes the victim's bytes.
func TestVolumeAliasRefused(t *testing.T) {
	ms := startCluster(t, 1)
	m := ms[0]
	if _, err := m.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "victim", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(m.dir, "volumes", "victim.img")
	eventually(t, 20*time.Second, "victim online", func() bool {
		v, err := m.c.Volume(context.Background(), "victim")
		return err == nil && v.State == catalog.VolumeOnline
	})
	data := bytes.Repeat([]byte("victim's data. "), 1000)
	if err := os.WriteFile(file, append(data, make([]byte, 1<<20-len(data))...), 0o600); err != nil {
		t.Fatal(err)
	}

	alias := catalog.Command{V: catalog.CommandVersion, Op: catalog.OpCreateVolume, Volume: &catalog.Volume{
		Name: "alias", UUID: strings.Repeat("1", 32), NGUID: strings.Repeat("2", 32), Size: 1 << 20, BlockSize: 512,
		Path: "./victim.img", Node: m.id,
	}}
	if st, code := rawApply(t, m.a.APIAddr(), "", alias); st != http.StatusUnauthorized || code != api.CodeUnauthenticated {
		t.Errorf("internal/apply without identity: %d %s, want 401 unauthenticated", st, code)
	}
	if st, code := rawApply(t, m.a.APIAddr(), testNodeToken, alias); st != http.StatusForbidden || code != api.CodeForbidden {
		t.Errorf("internal/apply of a create with the node token: %d %s, want 403 forbidden", st, code)
	}
	if _, err := m.a.Node.Apply(alias); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("the alias command through raft: %v, want invalid", err)
	}
	// Every spelling of the victim's path, and its UUIDs, are refused.
	for _, p := range []string{"victim.img", "./victim.img", "x/../victim.img"} {
		a := *alias.Volume
		a.Path = p
		c := alias
		c.Volume = &a
		if _, err := m.a.Node.Apply(c); err == nil {
			t.Errorf("alias path %q accepted", p)
		}
	}
	if err := m.c.DeleteVolume(ctx(t), "alias"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("delete alias: %v", err)
	}
	// A real second volume comes and goes; the victim keeps its bytes.
	if _, err := m.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "other", Size: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := m.c.DeleteVolume(ctx(t), "other"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "other purged", func() bool {
		_, err := m.c.Volume(context.Background(), "other")
		return errors.Is(err, catalog.ErrNotFound)
	})
	got, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(got, data) {
		t.Fatalf("victim's bytes: %v", err)
	}
	if v, err := m.c.Volume(ctx(t), "victim"); err != nil || v.State != catalog.VolumeOnline {
		t.Fatalf("victim: %+v %v", v, err)
	}
}
