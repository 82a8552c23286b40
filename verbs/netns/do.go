package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Sentinel errors.
var (
	// ErrNotFound: no namespace file for the name.
	ErrNotFound = errors.New("netns: network namespace not found")
	// ErrSwitch: setns(2) failed (usually missing CAP_SYS_ADMIN).
	ErrSwitch = errors.New("netns: cannot enter network namespace")
)

// RunDir is where `ip netns add` creates named namespaces.
const RunDir = "/run/netns"

// Path returns the namespace file for name (see the package doc on names).
func Path(name string) string {
	if strings.ContainsRune(name, '/') {
		return name
	}
	return filepath.Join(RunDir, name)
}

// Do runs fn with the calling goroutine locked to its OS thread and that
// thread inside the network namespace name, then restores the thread's
// namespace. An empty name runs fn directly. fn must not start goroutines
// that expect to inherit the namespace (they do not). Do returns fn's error,
// or an error wrapping ErrNotFound / ErrSwitch when the namespace could not
// be entered (fn did not run then).
func Do(name string, fn func() error) error {
	if name == "" {
		return fn()
	}
	target, err := os.Open(Path(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrNotFound, Path(name))
		}
		return fmt.Errorf("netns: open %s: %w", Path(name), err)
	}
	defer target.Close()

	runtime.LockOSThread()
	// The thread's own namespace, to come back to.
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: open the thread's namespace: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("%w %s: %v", ErrSwitch, Path(name), err)
	}
	ferr := fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Keep the goroutine locked: the runtime then terminates this
		// thread instead of reusing it in the wrong namespace.
		return fmt.Errorf("netns: restoring the thread's namespace: %v (after: %w)", err, ferr)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Current returns an identifier of the calling thread's network namespace
// (device and inode of its namespace file, as `ls -L -i` shows), for logs
// and tests. Call it with the goroutine locked to its thread to get a
// stable answer.
func Current() (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), &st); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}
