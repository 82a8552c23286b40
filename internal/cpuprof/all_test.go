package cpuprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Paths.Start starts every named recording and stops them all; when one
// cannot start, those it started are stopped (a CPU profile left running
// would make the next one fail) and the error names the flag.
func TestPathsStart(t *testing.T) {
	dir := t.TempDir()
	bad := Paths{CPU: filepath.Join(dir, "cpu"), Mem: filepath.Join(dir, "missing", "mem")}
	if _, err := bad.Start(); err == nil || !strings.Contains(err.Error(), "--memprofile") {
		t.Fatalf("a memprofile in a missing directory: %v", err)
	}
	p := Paths{CPU: filepath.Join(dir, "cpu2"), Mem: filepath.Join(dir, "mem"), Trace: filepath.Join(dir, "trace")}
	stop, err := p.Start()
	if err != nil {
		t.Fatalf("after a failed start: %v", err)
	}
	stop()
	for _, f := range []string{p.CPU, p.Mem, p.Trace} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v (empty or missing)", f, err)
		}
	}
	stop, err = Paths{}.Start()
	if err != nil {
		t.Fatal(err)
	}
	stop()
}
