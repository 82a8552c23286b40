package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEmbeddedDefaultIsValid(t *testing.T) {
	c, err := Load(NewViper(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 || c.Listeners[0].Addr != "127.0.0.1:4420" || c.Listeners[0].isTCP() ||
		c.Listeners[1].Addr != "127.0.0.1:8009" || !c.Listeners[1].isTCP() {
		t.Errorf("listeners %+v, want RDMA on 127.0.0.1:4420 and NVMe/TCP on 127.0.0.1:8009", c.Listeners)
	}
	if c.Transport.Provider != "auto" || len(c.Volumes) != 1 || len(c.Subsystems) != 1 {
		t.Errorf("unexpected default: %+v", c)
	}
	if !c.Subsystems[0].AllowAnyHost {
		t.Error("default subsystem must allow any host")
	}
}

func TestFileAndEnvOverride(t *testing.T) {
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("listeners:\n  - addr: 127.0.0.1:5000\n  - addr: 127.0.0.1:5001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RDMABLKD_TRANSPORT_PROFILE", "pvrdma")
	t.Setenv("RDMABLKD_TRANSPORT_POLL_CLEAN", "false")
	v := NewViper()
	if err := MergeFile(v, f); err != nil {
		t.Fatal(err)
	}
	c, err := Load(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 || c.Listeners[1].Addr != "127.0.0.1:5001" {
		t.Errorf("file did not replace listeners: %+v", c.Listeners)
	}
	if c.Transport.Profile != "pvrdma" {
		t.Errorf("env did not override profile: %q", c.Transport.Profile)
	}
	if c.Transport.PollClean == nil || *c.Transport.PollClean {
		t.Errorf("env did not turn poll_clean off: %v", c.Transport.PollClean)
	}
	if len(c.Volumes) != 1 {
		t.Errorf("defaults not kept for keys the file does not set")
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c := Config{
		Transport: TransportConfig{Provider: "magic"},
		Volumes: []VolumeConfig{
			{Name: "a", Path: "a.img", Size: "12Q"},
			{Name: "a", Path: "b.img", BlockSize: 1000},
		},
		Subsystems: []SubsysConfig{{NQN: "nqn.x", Namespaces: []NSConfig{{NSID: 0, Volume: "zz"}}}},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"no listeners", "provider", "12Q", "defined twice", "block_size", "unknown volume", "invalid nsid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestSendWithInvalidateKey(t *testing.T) {
	c, err := Load(NewViper(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport.SendWithInvalidate != nil {
		t.Fatalf("default send_with_invalidate %v, want unset", *c.Transport.SendWithInvalidate)
	}
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte("transport: {send_with_invalidate: false}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := NewViper()
	if err := MergeFile(v, f); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(v, nil); err != nil {
		t.Fatal(err)
	}
	if s := c.Transport.SendWithInvalidate; s == nil || *s {
		t.Fatalf("send_with_invalidate %v, want false", s)
	}
}

// TestEnvSetsKeysTheDefaultLacks: a key the embedded default does not
// mention (cluster.node_id) is still read from its variable, and a list
// of strings takes commas.
func TestEnvSetsKeysTheDefaultLacks(t *testing.T) {
	t.Setenv("RDMABLKD_CLUSTER_NODE_ID", "n9")
	t.Setenv("RDMABLKD_CLUSTER_JOIN", "127.0.0.1:7421,127.0.0.1:7422")
	t.Setenv("RDMABLKD_CLUSTER_RAFT_ELECTION_TIMEOUT", "3s")
	c, err := Load(NewViper(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cluster.NodeID != "n9" || len(c.Cluster.Join) != 2 || c.Cluster.Raft.ElectionTimeout != 3*time.Second {
		t.Fatalf("cluster config from the environment: %+v", c.Cluster)
	}
}
