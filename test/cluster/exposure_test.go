package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/test/testproc"
)

const exposedConfig = `data_dir: %s
log: {level: info, format: json}
transport: {provider: soft}
listeners: [{addr: "127.0.0.1:0"}]
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: n1
  raft_bind: 127.0.0.1:0
  api_bind: 0.0.0.0:%s
  api_advertise: 127.0.0.1:%[2]s
  bootstrap: true
  auth: {insecure: %v}
`

// TestExposedAPIRefused: rdmablkd with the control API on a non-loopback
// address and no TLS exits non-zero with one line naming the setting (no
// panic); with cluster.auth.insecure it starts and logs an INSECURE
// warning.
func TestExposedAPIRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs rdmablkd")
	}
	bin := testproc.BuildGoBinary(t, "github.com/rdmablk/rdmablk/cmd/rdmablkd")
	write := func(insecure bool) string {
		dir := t.TempDir()
		_, port, _ := strings.Cut(testproc.FreePort(t), ":")
		f := filepath.Join(dir, "rdmablkd.yaml")
		if err := os.WriteFile(f, fmt.Appendf(nil, exposedConfig, dir, port, insecure), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "--config", write(false))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); err == nil || !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("exposed API without TLS: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "is not a loopback address and the API has no TLS") ||
		!strings.Contains(s, "cluster.auth.insecure") || strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Fatalf("refusal output:\n%s", s)
	}

	d := testproc.New(t, bin)
	d.Name = "insecure"
	d.Start("--config", write(true))
	d.WaitLog("cluster ready", 60*time.Second)
	if !d.LogContains(`"level":"WARN","msg":"INSECURE: cluster API accepts every request`) {
		t.Fatalf("no INSECURE warning:\n%s", d.Log())
	}
}
