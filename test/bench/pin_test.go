package main

import (
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStartPinned: a child started on one CPU runs there (every thread),
// and this process's own mask is left as it was.
func TestStartPinned(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1)")
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	cpu := runtime.NumCPU() - 1 // not CPU 0 alone, when there are several
	cmd := exec.Command(sleep, "30")
	if err := startPinned(cmd, cpuSet{cpu}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	n, err := checkPinned(cmd.Process.Pid, cpuSet{cpu})
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Fatalf("checked %d threads", n)
	}
	if runtime.NumCPU() > 1 {
		if _, err := checkPinned(cmd.Process.Pid, cpuSet{0, cpu}); err == nil {
			t.Fatal("checkPinned accepted a mask the child does not have")
		}
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("the harness's own CPU mask changed: %v → %v", before, after)
	}
	if !contains(cmd.Environ(), "GOMAXPROCS=1") {
		t.Fatalf("child environment lacks GOMAXPROCS=1")
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestReplPlacements(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("pinned placements need 2 CPUs")
	}
	for mode, want := range map[string][]string{
		"split":             {"split"},
		"none":              {"none"},
		"both":              {"split", "none"},
		"all":               {"split", "owner-alone", "none"},
		"owner-alone,split": {"owner-alone", "split"},
	} {
		pls, err := replPlacements(mode)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		var got []string
		for _, p := range pls {
			got = append(got, p.name)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", mode, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: got %v, want %v", mode, got, want)
			}
		}
	}
	if _, err := replPlacements("split,bogus"); err == nil {
		t.Fatal("an unknown placement was accepted")
	}
	s := replPlacementsByName["split"]
	if s.gen.String() != s.owner.String() || s.replica.String() == s.owner.String() {
		t.Fatalf("split: owner %s, generator %s, replica %s", s.owner, s.gen, s.replica)
	}
}
