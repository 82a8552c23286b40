package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIDependencies: the initiator CLI, which runs in guests, links no
// cluster server machinery (raft, bbolt), no metrics library and no target
// code: `go list -deps ./cmd/rdmablk` holds none of them. (It needs the
// cluster admin commands to use a client package without the server:
// cluster/api is being split for that.)
func TestCLIDependencies(t *testing.T) {
	gobin := "go"
	if r := os.Getenv("GOROOT"); r != "" {
		gobin = filepath.Join(r, "bin", "go")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/hashicorp/raft", "go.etcd.io/bbolt", "github.com/boltdb/bolt",
		"github.com/prometheus/", "github.com/rdmablk/rdmablk/target",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("cmd/rdmablk depends on %s", dep)
			}
		}
	}
}
