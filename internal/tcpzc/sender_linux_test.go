package tcpzc

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// tcpPair is a loopback TCP connection: a is the accepted end (as the
// Listener's, a plain TCP listener unless mptcp), b the dialed one.
func tcpPair(t *testing.T, mptcp bool) (a, b *net.TCPConn) {
	t.Helper()
	a, b, err := loopbackPair(mptcp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// zcSendOn makes one zero-copy send of p on c, the way target/tcp's sockWriter does
// (inside the connection's raw write callback).
func zcSendOn(t *testing.T, c *net.TCPConn, z *Sender, p []byte, rec *uint32) (int, syscall.Errno) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	iov := []syscall.Iovec{{Base: &p[0]}}
	iov[0].SetLen(len(p))
	var n int
	var errno syscall.Errno
	if err := rc.Write(func(fd uintptr) bool {
		n, errno = z.Send(fd, iov, rec)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return n, errno
}

// TestZCSenderHoldsUntilNotice is the buffer-lifetime rule: the slots of
// a write sent zero-copy are released only after the kernel's notices,
// which come once the data left the socket — here, only when the peer
// reads what its full window held back. A sender whose connection ends
// with notices outstanding is abandoned to the janitor, which releases
// the slots (and closes the ring) when the kernel lets go.
func TestZCSenderHoldsUntilNotice(t *testing.T) {
	if !Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	for _, end := range []string{"peer reads", "abandoned"} {
		t.Run(end, func(t *testing.T) {
			a, b := tcpPair(t, false)
			_ = b.SetReadBuffer(64 << 10)
			_ = a.SetWriteBuffer(64 << 10)
			released := make(chan []uint16, 1)
			st := &Counters{}
			z, _ := New(func(s []uint16) { released <- append([]uint16(nil), s...) }, st)
			if z == nil {
				t.Fatal("no sender")
			}
			buf := make([]byte, 256<<10)
			var rec uint32
			sent := 0
			for {
				n, errno := zcSendOn(t, a, z, buf, &rec)
				if errno == syscall.EAGAIN {
					break
				}
				if errno != 0 {
					t.Fatal(errno)
				}
				sent += n
			}
			if sent == 0 || st.Sends.Load() == 0 || st.Bytes.Load() != uint64(sent) {
				t.Fatalf("sent %d bytes, stats %d sends %d bytes", sent, st.Sends.Load(), st.Bytes.Load())
			}
			z.Reap()
			out, held := z.Seal(rec, []uint16{3, 1, 4}, make([]byte, 0, 64))
			if !held {
				t.Fatal("a write whose data still sits in the socket was not held")
			}
			if out == nil || cap(out) != 64 {
				t.Fatalf("next small-PDU buffer: cap %d", cap(out))
			}
			z.Reap()
			select {
			case s := <-released:
				t.Fatalf("slots %v released while the socket still holds their data", s)
			default:
			}
			switch end {
			case "peer reads":
				go func() { _, _ = io.CopyN(io.Discard, b, int64(sent)) }()
				deadline := time.Now().Add(10 * time.Second)
				for len(released) == 0 && time.Now().Before(deadline) {
					z.Wait(time.Until(deadline))
				}
				z.Close(time.Second)
				if st.Abandoned.Load() != 0 {
					t.Fatal("sender abandoned although every notice was in")
				}
			case "abandoned":
				a.Close() // FIN queued behind the data the peer does not read
				z.Close(20 * time.Millisecond)
				if st.Abandoned.Load() != 1 || AbandonedSenders() == 0 {
					t.Fatalf("abandoned %d, janitor holds %d", st.Abandoned.Load(), AbandonedSenders())
				}
				b.SetLinger(0)
				b.Close() // RST: the kernel drops the data, the notices follow
			}
			select {
			case s := <-released:
				if len(s) != 3 || s[0] != 3 || s[1] != 1 || s[2] != 4 {
					t.Fatalf("released %v", s)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("slots never released")
			}
			z.mu.Lock()
			closed, notes := z.closed, z.notes
			z.mu.Unlock()
			if !closed || notes != 0 {
				t.Fatalf("after release: closed %v, %d notices outstanding", closed, notes)
			}
		})
	}
}

// TestZCProbeFallsBack: a socket that cannot send zero-copy (one accepted
// by Go's default Multipath TCP listener, on a kernel with MPTCP) turns
// the sender off at its first send, which writev then does.
func TestZCProbeFallsBack(t *testing.T) {
	if !Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	a, _ := tcpPair(t, true)
	z, _ := New(func([]uint16) {}, &Counters{})
	defer z.Close(time.Second)
	var rec uint32
	n, errno := zcSendOn(t, a, z, []byte("probe"), &rec)
	if errno == 0 && n == 5 {
		t.Skip("this kernel sends zero-copy on MPTCP-accepted sockets")
	}
	if errno != ErrOff || !z.Unusable() {
		t.Fatalf("send: %d bytes, errno %v, unusable %v", n, errno, z.Unusable())
	}
	if _, held := z.Seal(rec, []uint16{1}, nil); held {
		t.Fatal("slots held after a failed probe")
	}
}

// TestZCCopiesDetected: where the kernel reports copies in its notices
// (Linux ≥ 6.2), a connection whose first CopiedProbe notices all say
// copied (a peer on this machine) stops sending zero-copy.
func TestZCCopiesDetected(t *testing.T) {
	if !Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	a, b := tcpPair(t, false)
	go func() { _, _ = io.Copy(io.Discard, b) }()
	st := &Counters{}
	z, _ := New(func([]uint16) {}, st)
	defer z.Close(time.Second)
	p := make([]byte, 8192)
	for range CopiedProbe {
		var rec uint32
		if _, errno := zcSendOn(t, a, z, p, &rec); errno != 0 {
			t.Fatal(errno)
		}
		for z.Pending() > 0 {
			z.Wait(time.Second)
		}
		if _, held := z.Seal(rec, nil, nil); held {
			t.Fatal("held after its notice")
		}
	}
	if st.Copied.Load() == 0 {
		t.Skip("this kernel does not report copies (IORING_SEND_ZC_REPORT_USAGE, Linux 6.2)")
	}
	if st.Copied.Load() != CopiedProbe || !z.Copies() {
		t.Fatalf("%d of %d notices copied, copies %v", st.Copied.Load(), CopiedProbe, z.Copies())
	}
}

// slowReaderPair is a loopback pair whose accepted end a can queue far
// more than the dialed end b's window holds (notices then wait for b to
// read); it skips the test where zero copy does not work.
func slowReaderPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	if !Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	a, b = tcpPair(t, false)
	_ = b.SetReadBuffer(64 << 10)
	_ = a.SetWriteBuffer(8 << 20)
	return a, b
}

// TestZCSenderBoundsNotices: notices outstanding never reach the size of
// the ring's completion queue (an overflowing CQ keeps completions where
// only a GETEVENTS call finds them): past the bound a send reports
// ErrOff and the write copies; the held writes are all released once
// the peer reads.
func TestZCSenderBoundsNotices(t *testing.T) {
	a, b := slowReaderPair(t)
	released := 0
	st := &Counters{}
	z, _ := New(func(s []uint16) { released += len(s) }, st)
	defer z.Close(time.Second)
	p := make([]byte, 4096)
	held, off, sent := 0, 0, 0
	for i := range 4 * z.cqCap {
		var rec uint32
		n, errno := zcSendOn(t, a, z, p, &rec)
		switch errno {
		case ErrOff:
			off++
		case 0:
			sent += n
		default:
			t.Fatalf("send %d: %v", i, errno)
		}
		z.mu.Lock()
		notes := z.notes
		z.mu.Unlock()
		if notes >= z.cqCap {
			t.Fatalf("send %d: %d notices outstanding, CQ holds %d", i, notes, z.cqCap)
		}
		if rec != 0 {
			if _, h := z.Seal(rec, []uint16{uint16(i)}, nil); h {
				held++
			}
		}
	}
	if off == 0 || held == 0 {
		t.Fatalf("bound never reached: %d held, %d sends refused", held, off)
	}
	if st.Full.Load() != uint64(off) {
		t.Fatalf("Counters.Full %d, want the %d sends refused at the bound", st.Full.Load(), off)
	}
	go func() { _, _ = io.CopyN(io.Discard, b, int64(sent)) }()
	deadline := time.Now().Add(10 * time.Second)
	for z.Pending() > 0 && time.Now().Before(deadline) {
		z.Wait(time.Until(deadline))
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if released != held {
		t.Fatalf("released %d of %d held writes", released, held)
	}
}

// TestZCSenderResumesAfterBound: a connection that hit the bound on
// notices goes zero-copy again once the kernel posted them, with no
// other reaper than its sends (the host side has none).
func TestZCSenderResumesAfterBound(t *testing.T) {
	a, b := slowReaderPair(t)
	z, _ := New(func([]uint16) {}, &Counters{})
	defer z.Close(time.Second)
	p := make([]byte, 4096)
	sent := 0
	for i := 0; ; i++ {
		if i == 4*z.cqCap {
			t.Fatal("bound never reached")
		}
		var rec uint32
		n, errno := zcSendOn(t, a, z, p, &rec)
		if rec != 0 {
			z.Seal(rec, nil, nil)
		}
		if errno == ErrOff {
			break
		}
		if errno != 0 {
			t.Fatalf("send %d: %v", i, errno)
		}
		sent += n
	}
	read := make(chan error, 1)
	go func() { _, err := io.CopyN(io.Discard, b, int64(sent)); read <- err }()
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rec uint32
		_, errno := zcSendOn(t, a, z, p, &rec)
		if rec != 0 {
			z.Seal(rec, nil, nil)
		}
		if errno == 0 {
			return
		}
		if errno != ErrOff {
			t.Fatal(errno)
		}
		if !time.Now().Before(deadline) {
			t.Fatal("still refused after the peer read everything: the notices were never reaped")
		}
		// Until the kernel posts a completion; one already posted
		// returns at once (only a send reaps here).
		_, _ = z.ring.WaitFor(time.Until(deadline))
	}
}

// TestZCSendOverdue: a send whose completion the kernel does not post
// inline (here forced: without MSG_DONTWAIT io_uring parks a send on a
// full socket until it drains) fails with EIO after sendWait instead of
// blocking the writer for good; the sender turns off, and the write's
// slots, which the parked send may still read, stay held until the send
// completes and its notice is in. The sender then closes without being
// abandoned.
func TestZCSendOverdue(t *testing.T) {
	a, b := slowReaderPair(t)
	_ = a.SetWriteBuffer(64 << 10)
	defer func(d time.Duration) { sendWait = d }(sendWait)
	sendWait = 50 * time.Millisecond
	released := make(chan []uint16, 1)
	st := &Counters{}
	z, _ := New(func(s []uint16) {
		if len(s) > 0 { // the filling writes hold none
			released <- append([]uint16(nil), s...)
		}
	}, st)
	p := make([]byte, 64<<10)
	sent := 0
	var rec uint32
	for {
		rec = 0
		n, errno := zcSendOn(t, a, z, p, &rec)
		z.Seal(rec, nil, nil)
		if errno == syscall.EAGAIN {
			break
		}
		if errno != 0 {
			t.Fatal(errno)
		}
		sent += n
	}
	z.mu.Lock()
	z.rwFlags = 0
	z.mu.Unlock()
	// Sends go on while the peer's window takes data; the first that
	// finds no room at all parks.
	var errno syscall.Errno
	for i := 0; i < 1000; i++ {
		var n int
		rec = 0
		if n, errno = zcSendOn(t, a, z, p, &rec); errno != 0 {
			break
		}
		z.Seal(rec, nil, nil)
		sent += n
	}
	if errno != syscall.EIO || !z.Unusable() || st.Overdue.Load() != 1 {
		t.Fatalf("overdue send: errno %v, unusable %v, overdue %d", errno, z.Unusable(), st.Overdue.Load())
	}
	if _, held := z.Seal(rec, []uint16{7}, nil); !held {
		t.Fatal("slots of a write whose send may still be issued were not held")
	}
	if _, errno := zcSendOn(t, a, z, p, new(uint32)); errno != ErrOff {
		t.Fatalf("send after an overdue one: errno %v, want ErrOff (copy)", errno)
	}
	// The peer drains the socket: the parked send goes out (all of p or
	// part of it) and completes, its notice follows.
	go func() { _, _ = io.Copy(io.Discard, b) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(released) == 0 && time.Now().Before(deadline) {
		z.Wait(time.Until(deadline))
	}
	select {
	case s := <-released:
		if len(s) != 1 || s[0] != 7 {
			t.Fatalf("released %v", s)
		}
	default:
		t.Fatal("slots never released after the overdue send completed")
	}
	z.Close(time.Second)
	z.mu.Lock()
	closed, notes, lost := z.closed, z.notes, z.lost
	z.mu.Unlock()
	if !closed || notes != 0 || lost != 0 || st.Abandoned.Load() != 0 {
		t.Fatalf("after release: closed %v, %d notices outstanding, lost %d, abandoned %d", closed, notes, lost, st.Abandoned.Load())
	}
	if sent == 0 {
		t.Fatal("nothing sent before the overdue send")
	}
}

// TestZCHostSenderCloses: a host-side sender (NewHost) holds nothing, so
// its Close neither waits for the notices still to come nor leaves the
// sender to the janitor, and sends after it copy (ErrOff).
func TestZCHostSenderCloses(t *testing.T) {
	a, b := slowReaderPair(t)
	st := &Counters{}
	z, _ := NewHost(st)
	if z == nil {
		t.Fatal("no host sender")
	}
	p := make([]byte, 64<<10)
	sent := 0
	for i := 0; i < 64; i++ {
		var rec uint32
		n, errno := zcSendOn(t, a, z, p, &rec)
		if errno == syscall.EAGAIN {
			break
		}
		if errno != 0 {
			t.Fatal(errno)
		}
		z.Seal(rec, nil, nil) // as the host's writer: a record without slots
		sent += n
	}
	if sent == 0 || st.Sends.Load() == 0 {
		t.Fatalf("sent %d bytes in %d zero-copy sends", sent, st.Sends.Load())
	}
	before := AbandonedSenders()
	z.Close(time.Hour) // the peer has not read: notices are outstanding
	if st.Abandoned.Load() != 0 || AbandonedSenders() != before {
		t.Fatalf("host sender abandoned (%d, janitor holds %d)", st.Abandoned.Load(), AbandonedSenders())
	}
	if _, errno := zcSendOn(t, a, z, p, new(uint32)); errno != ErrOff {
		t.Fatalf("send after Close: %v, want ErrOff", errno)
	}
	// The data sent before Close still arrives whole.
	if _, err := io.CopyN(io.Discard, b, int64(sent)); err != nil {
		t.Fatal(err)
	}
}
