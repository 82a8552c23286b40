package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// build is one import path built at most once per test process.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

// BuildGoBinary builds the main package importPath (for example
// "github.com/rdmablk/rdmablk/cmd/rdmablkd") with the go command of the
// running toolchain and returns the executable's path. It builds each
// import path once per test process; later calls, also concurrent ones,
// return the same path (or fail the test with the same build error). The
// executable lives in a temporary directory that is not removed.
func BuildGoBinary(t testing.TB, importPath string) string {
	t.Helper()
	buildsMu.Lock()
	b := builds[importPath]
	if b == nil {
		b = &build{}
		builds[importPath] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		name := path.Base(importPath)
		dir, err := os.MkdirTemp("", "rdmablk-test-"+name)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		out, err := exec.Command(goTool(), "build", "-o", b.path,
			importPath).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", importPath, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// goTool is the go command that runs this test: $GOROOT/bin/go when go
// test set GOROOT, else the one on PATH.
func goTool() string {
	if r := os.Getenv("GOROOT"); r != "" {
		if p := filepath.Join(r, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
