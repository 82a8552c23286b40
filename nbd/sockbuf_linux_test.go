package nbd

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSizeSocketBuffers: both ends of an attachment's socket pair get a
// send buffer of at least socketBuffer (the kernel reports twice what was
// set), past net.core.wmem_max when privileged — so a queue depth of
// 4 KiB writes never makes the kernel's request path wait for room.
func TestSizeSocketBuffers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SO_SNDBUFFORCE needs CAP_NET_ADMIN")
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	sizeSocketBuffers(fds)
	for i, fd := range fds {
		n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			t.Fatal(err)
		}
		if n < socketBuffer {
			t.Fatalf("end %d: SO_SNDBUF %d, want ≥ %d", i, n, socketBuffer)
		}
	}
}
