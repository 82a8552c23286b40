package cpuprof

import (
	"os"
	"path/filepath"
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
