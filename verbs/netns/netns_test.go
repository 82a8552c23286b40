package netns_test

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/verbs/netns"
)

func TestDoEmptyNameRunsInPlace(t *testing.T) {
	ran := false
	if err := netns.Do("", func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("Do(\"\"): ran %v, err %v", ran, err)
	}
}

func TestDoUnknownName(t *testing.T) {
	err := netns.Do("rdmablk-no-such-netns", func() error { t.Fatal("fn ran"); return nil })
	if !errors.Is(err, netns.ErrNotFound) {
		t.Fatalf("Do(unknown): %v, want ErrNotFound", err)
	}
}

func TestPath(t *testing.T) {
	if got := netns.Path("blue"); got != "/run/netns/blue" {
		t.Fatalf("Path(blue) = %q", got)
	}
	if got := netns.Path("/proc/1/ns/net"); got != "/proc/1/ns/net" {
		t.Fatalf("Path(path) = %q", got)
	}
}

// newNamespace makes a fresh network namespace on a dedicated thread and
// returns its path; the thread (and so the namespace) lives until the test
// ends.
func newNamespace(t *testing.T) string {
	t.Helper()
	type result struct {
		path string
		err  error
	}
	ready, done := make(chan result, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ready <- result{err: err}
			return
		}
		ready <- result{path: fmt.Sprintf("/proc/%d/task/%d/ns/net", unix.Getpid(), unix.Gettid())}
		<-done
	}()
	r := <-ready
	if r.err != nil {
		t.Skipf("cannot create a network namespace here: %v", r.err)
	}
	t.Cleanup(func() { close(done) })
	return r.path
}

func TestDoEntersAndRestores(t *testing.T) {
	path := newNamespace(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := netns.Current()
	if err != nil {
		t.Fatal(err)
	}
	var inside string
	var ifaces []net.Interface
	sentinel := errors.New("fn error")
	err = netns.Do(path, func() error {
		inside, _ = netns.Current()
		ifaces, _ = net.Interfaces()
		return sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if inside == "" || inside == before {
		t.Fatalf("inside namespace %q, outside %q: Do did not switch", inside, before)
	}
	if len(ifaces) != 1 || ifaces[0].Name != "lo" {
		t.Fatalf("a fresh namespace should have only lo, got %v", ifaces)
	}
	after, _ := netns.Current()
	if after != before {
		t.Fatalf("namespace after Do %q, before %q", after, before)
	}
}
