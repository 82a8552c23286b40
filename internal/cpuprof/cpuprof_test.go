package cpuprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStart: an empty path profiles nothing; a path gets a profile once
// stopped; an unwritable path is an error naming the flag.
func TestStart(t *testing.T) {
	stop, err := Start("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	p := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err = Start(p)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Fatalf("profile %s is empty", p)
	}
	if _, err := Start(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Fatal("a profile in a missing directory was accepted")
	}
}

// TestTrace: an empty path traces nothing; a path gets a trace once
// stopped; a second trace while one runs, and an unwritable path, are
// errors naming the flag.
func TestTrace(t *testing.T) {
	stop, err := Trace("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	p := filepath.Join(t.TempDir(), "run.trace")
	stop, err = Trace(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Trace(filepath.Join(t.TempDir(), "second.trace")); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("a second trace while one runs: %v", err)
	}
	stop()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 {
		t.Fatalf("trace %s is empty", p)
	}
	if _, err := Trace(filepath.Join(t.TempDir(), "missing", "run.trace")); err == nil {
		t.Fatal("a trace in a missing directory was accepted")
	}
}
