package cpuprof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlags: for --cpuprofile (Start) and --trace (Trace), an empty path
// records nothing; a path gets a non-empty file once stopped; a second
// recording while one runs, and an unwritable path, are errors naming the
// flag.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		flag  string
		start func(string) (func(), error)
	}{{"--cpuprofile", Start}, {"--trace", Trace}, {"--memprofile", Mem}} {
		t.Run(c.flag, func(t *testing.T) {
			stop, err := c.start("")
			if err != nil {
				t.Fatal(err)
			}
			stop()
			p := filepath.Join(t.TempDir(), "out")
			stop, err = c.start(p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.start(filepath.Join(t.TempDir(), "second")); err == nil || !strings.Contains(err.Error(), c.flag) {
				t.Errorf("a second recording while one runs: %v", err)
			}
			stop()
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() == 0 {
				t.Fatalf("%s is empty", p)
			}
			if _, err := c.start(filepath.Join(t.TempDir(), "missing", "out")); err == nil || !strings.Contains(err.Error(), c.flag) {
				t.Fatalf("a file in a missing directory: %v", err)
			}
		})
	}
}
