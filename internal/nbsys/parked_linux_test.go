package nbsys

import (
	"testing"

	"golang.org/x/sys/unix"
)

// parkedEventFD is a non-blocking eventfd in the parked set; ready makes
// it readable.
func parkedEventFD(t *testing.T) int {
	t.Helper()
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if err := WatchParked(fd, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	return fd
}

func ready(t *testing.T, fd int) {
	t.Helper()
	if _, err := unix.Write(fd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
}

// TestParkedReady: the set tells a spinner apart its own descriptor and
// any other that is ready — for input, or for room while a writer waits —
// and forgets a descriptor once it is closed or unwatched.
func TestParkedReady(t *testing.T) {
	UseParked()
	buf := make([]unix.EpollEvent, 4)
	look := func(self int, wantSelf, wantOthers bool) {
		t.Helper()
		s, o := ParkedReady(self, buf)
		if s != wantSelf || o != wantOthers {
			t.Fatalf("ParkedReady(%d) = self %v, others %v; want %v, %v", self, s, o, wantSelf, wantOthers)
		}
	}
	a, b := parkedEventFD(t), parkedEventFD(t)
	defer unix.Close(a)
	look(a, false, false)
	ready(t, b)
	look(a, false, true)
	look(b, true, false)
	ready(t, a)
	look(a, true, true)

	// Closing b drops it from the set.
	if err := unix.Close(b); err != nil {
		t.Fatal(err)
	}
	look(a, true, false)
	look(-1, false, true) // a is another's now

	// Room: an eventfd is always writable, so watching a for output makes
	// it ready for everyone else; watching it for input only again ends
	// that. Watching twice is a change, not an error.
	c := parkedEventFD(t)
	defer unix.Close(c)
	if err := WatchParked(c, unix.EPOLLIN|unix.EPOLLOUT); err != nil {
		t.Fatal(err)
	}
	look(a, true, true)
	if err := WatchParked(c, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	look(a, true, false)

	// An unwatched descriptor is not looked at, ready or not.
	UnwatchParked(a)
	look(a, false, false)

	if s, o := ParkedReady(a, nil); s || !o {
		t.Fatalf("ParkedReady with no buffer = %v, %v; want false, true (never spin blind)", s, o)
	}
}

// TestParkedUnusedAddsNothing: until UseParked, WatchParked keeps a
// descriptor out of the set (no kernel callback per event for a set
// nobody reads); from then on it adds.
func TestParkedUnusedAddsNothing(t *testing.T) {
	was := parked.used.Load()
	parked.used.Store(false)
	defer parked.used.Store(was)
	buf := make([]unix.EpollEvent, 4)
	fd := parkedEventFD(t) // watched while unused
	defer unix.Close(fd)
	ready(t, fd)
	if s, o := ParkedReady(-1, buf); s || o {
		t.Fatalf("a descriptor watched before UseParked is in the set (self %v, others %v)", s, o)
	}
	UseParked()
	if err := WatchParked(fd, unix.EPOLLIN); err != nil {
		t.Fatal(err)
	}
	if _, o := ParkedReady(-1, buf); !o {
		t.Fatal("a ready descriptor watched after UseParked is not in the set")
	}
	UnwatchParked(fd)
}
