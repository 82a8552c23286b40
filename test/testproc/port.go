package testproc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreePort returns a loopback TCP address ("127.0.0.1:port") reserved for
// the test until it ends, for a daemon that must keep its address across
// a restart (so it cannot listen on :0).
//
// A port that was merely free a moment ago (listen on :0, close) is an
// ephemeral port: the kernel hands the same range to every outgoing
// connection and every :0 listener, so under a parallel test load another
// process could take it before the daemon binds it ("address already in
// use"). So the port comes from below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), which connect and :0 never
// pick, and is reserved against the other test processes of this machine
// by an exclusive flock on a file named after it in the temp directory,
// held until the test's cleanup; it must also bind at the time it is
// chosen (nothing else is listening on it).
func FreePort(t testing.TB) string {
	t.Helper()
	lo, hi := reservedRange()
	dir := filepath.Join(os.TempDir(), "rdmablk-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	start := lo + rand.IntN(hi-lo)
	for i := range hi - lo {
		port := lo + (start-lo+i)%(hi-lo)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				continue // another test holds it
			}
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			f.Close() // in use outside the tests
			continue
		}
		l.Close()
		t.Cleanup(func() { f.Close() }) // closing the file drops the lock
		return addr
	}
	t.Fatalf("FreePort: no free port in %d-%d", lo, hi-1)
	return ""
}

// reservedRange is where FreePort picks from: the 12,000 ports below the
// ephemeral range (or 10000-22000 when that range starts too low).
func reservedRange() (lo, hi int) {
	lo, hi = 10000, 22000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var eLo, eHi int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &eLo, &eHi); err != nil || eLo < 13024 {
		return lo, hi
	}
	return eLo - 12000, eLo
}
