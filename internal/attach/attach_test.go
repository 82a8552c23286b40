package attach_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const nqn = "nqn.2026-11.io.rdmablk:attach"

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.yaml")
	os.WriteFile(p, []byte(`run_dir: `+dir+`
attachments:
  - {name: v0, nqn: `+nqn+`, paths: [a:1, b:2], reconnect_delay: 250ms, ctrl_loss_tmo: 30s}
`), 0o600)
	f, err := attach.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	a := f.Attachments[0]
	if f.Provider != "auto" || a.ReconnectDelay != 250*time.Millisecond || a.CtrlLossTimeout != 30*time.Second ||
		a.Socket != filepath.Join(dir, "v0.sock") || a.Device != "auto" || len(a.Paths) != 2 {
		t.Fatalf("loaded %+v %+v", f, a)
	}
	for name, body := range map[string]string{
		"bad name":  "attachments: [{name: ../x, nqn: n, paths: [a:1]}]",
		"no paths":  "attachments: [{name: x, nqn: n}]",
		"no nqn":    "attachments: [{name: x, paths: [a:1]}]",
		"duplicate": "attachments: [{name: x, nqn: n, paths: [a:1]}, {name: x, nqn: n, paths: [a:1]}]",
	} {
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := attach.LoadFile(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRunListDisconnect: Run serves an attachment; List reports it with
// its path state; Disconnect stops it and unregisters it.
func TestRunListDisconnect(t *testing.T) {
	fab := soft.NewFabric()
	tgt := target.New(target.Options{Logger: quiet()})
	be := mem.New(8192, 512)
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{NQN: nqn, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}}}); err != nil {
		t.Fatal(err)
	}
	l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt, Addr: "192.0.2.1:4420", PortID: 1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close(); tgt.Close(); be.Close() }()

	// This host has no ublk: auto falls back to nbd and says why.
	defer attach.SetUblkProbe(false, false, nil)()
	dir := t.TempDir()
	cfg := attach.Config{Name: "v0", NQN: nqn, Paths: []string{"192.0.2.1:4420"}, Device: "auto", Queues: 1, QueueDepth: 8}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- attach.Run(ctx, []attach.Config{cfg}, initiator.Options{Provider: soft.New(soft.Options{Fabric: fab}), Logger: quiet()}, dir, quiet())
	}()
	var st *attach.Status
	for deadline := time.Now().Add(30 * time.Second); st == nil; {
		entries, err := attach.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == 1 && entries[0].Status != nil {
			st = entries[0].Status
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("attachment never listed")
		}
		time.Sleep(10 * time.Millisecond) // polling another goroutine's registration
	}
	if st.Size != 8192*512 || len(st.Paths) != 1 || st.Paths[0].State != "live" || st.Paths[0].Queues != 1 || st.Device != "" {
		t.Fatalf("status %+v", st)
	}
	c, err := nbdtest.Dial("unix", st.Socket, "v0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	entries, err := attach.List(dir)
	if err != nil || len(entries) != 1 || entries[0].Status == nil {
		t.Fatalf("list: %+v %v", entries, err)
	}
	st = entries[0].Status
	if st.Frontend != "nbd" || !strings.Contains(st.FrontendNote, "ublk unavailable: /dev/ublk-control missing") || st.Queues != 1 || st.QueueDepth != 8 || st.Requests < 1 || st.DeviceNote == "" {
		t.Fatalf("status after one write: %+v", st)
	}
	if err := attach.Disconnect(dir, "v0", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if entries, _ := attach.List(dir); len(entries) != 0 {
		t.Fatalf("still listed: %+v", entries)
	}
	if err := attach.Disconnect(dir, "v0", time.Second); !errors.Is(err, attach.ErrNotFound) {
		t.Fatalf("disconnect of a stopped attachment: %v", err)
	}
}

// rdmablk serve refuses a configuration with a typo'd key and names it
// with the nearest valid key (issue 11 item 2).
func TestLoadFileRejectsUnknownKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.yaml")
	if err := os.WriteFile(p, []byte("attachments:\n  - name: v\n    nqn: nqn.2026-11.io.rdmablk:v\n    paths: [127.0.0.1:4420]\n    queus: 4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := attach.LoadFile(p)
	if err == nil || !strings.Contains(err.Error(), `queus"`) || !strings.Contains(err.Error(), "queues") || !strings.Contains(err.Error(), p) {
		t.Fatalf("LoadFile with queus: %v", err)
	}
}

// A state file left by a dead process (kill -9) does not block the name:
// Running says so and Disconnect removes the stale files; a state file of
// a live process makes Start refuse the name.
func TestStaleAndLiveState(t *testing.T) {
	dir := t.TempDir()
	write := func(pid int) {
		b := fmt.Sprintf(`{"name":"v0","pid":%d,"control":%q,"socket":%q}`, pid, filepath.Join(dir, "v0.ctl"), filepath.Join(dir, "v0.sock"))
		if err := os.WriteFile(filepath.Join(dir, "v0.json"), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A pid that exited: our own child, reaped.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	write(cmd.Process.Pid)
	if pid, ok := attach.Running(dir, "v0"); ok {
		t.Fatalf("dead pid %d reported running", pid)
	}
	if err := attach.Disconnect(dir, "v0", time.Second); err != nil {
		t.Fatalf("disconnect of a dead attachment: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "v0.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale state file left: %v", err)
	}
	write(1) // init: alive
	if _, ok := attach.Running(dir, "v0"); !ok {
		t.Fatal("pid 1 not reported running")
	}
	cfg := attach.Config{Name: "v0", NQN: nqn, Paths: []string{"192.0.2.9:4420"}}
	_, err := attach.Start(context.Background(), cfg, initiator.Options{Provider: soft.New(soft.Options{Fabric: soft.NewFabric()})}, dir)
	if err == nil || !strings.Contains(err.Error(), "already running (pid 1)") {
		t.Fatalf("start over a live attachment: %v", err)
	}
}
