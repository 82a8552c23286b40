package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartErrorReadsThisRunsLine: the error line the attachment process
// printed in this run (after offset) is found; an older run's is not.
func TestStartErrorReadsThisRunsLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.log")
	old := "rdmablk: old failure\n"
	body := old + "time=... level=ERROR msg=\"attachment failed to start\"\nrdmablk: a: initiator: no subsystem NQN \"x\" at 1.2.3.4:4420\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := startError(p, int64(len(old))); got != `a: initiator: no subsystem NQN "x" at 1.2.3.4:4420` {
		t.Fatalf("got %q", got)
	}
	if got := startError(p, int64(len(body))); got != "" {
		t.Fatalf("nothing new: got %q", got)
	}
}

func TestDisconnectNeedsNamesOrNQN(t *testing.T) {
	root := newRoot()
	root.SetArgs([]string{"disconnect", "--run-dir", t.TempDir()})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "-n NQN") {
		t.Fatalf("no names: %v", err)
	}
	root = newRoot()
	root.SetArgs([]string{"disconnect", "-n", "nqn.2026-01.io.rdmablk:none", "--run-dir", t.TempDir()})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no attachment of nqn.2026-01.io.rdmablk:none") {
		t.Fatalf("unknown NQN: %v", err)
	}
}

// TestSchedFlag: connect and serve refuse an unknown --sched with a line
// that names it and the choices, before they touch anything.
func TestSchedFlag(t *testing.T) {
	if _, err := runRoot(t, "connect", "--sched", "fifo", "-a", "127.0.0.1:4420", "--run-dir", t.TempDir()); err == nil ||
		!strings.Contains(err.Error(), `--sched: scheduling policy "fifo": want batch or normal`) {
		t.Fatalf("connect --sched fifo: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "a.yaml")
	if err := os.WriteFile(cfg, []byte("attachments: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := runRoot(t, "serve", "-c", cfg, "--sched", "rr"); err == nil || !strings.Contains(err.Error(), `"rr"`) {
		t.Fatalf("serve --sched rr: %v", err)
	}
}
