package tcp

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// zcWorks reports whether this kernel sends zero-copy from a connection
// a Listener accepts (io_uring with IORING_OP_SENDMSG_ZC, Linux 6.1).
func zcWorks(t *testing.T) bool {
	t.Helper()
	a, _ := tcpPair(t, false)
	z, _ := newZCSender(func([]uint16) {}, &counters{})
	if z == nil {
		return false
	}
	defer z.close(time.Second)
	var rec uint32
	n, errno := zcSendOn(t, a, z, []byte("probe"), &rec)
	return errno == 0 && n == 5
}

// tcpPair is a loopback TCP connection: a is the accepted end (as the
// Listener's, a plain TCP listener unless mptcp), b the dialed one.
func tcpPair(t *testing.T, mptcp bool) (a, b *net.TCPConn) {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(mptcp)
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := <-acc
	if c == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); d.Close() })
	return c.(*net.TCPConn), d.(*net.TCPConn)
}

// zcSendOn makes one zero-copy send of p on c, the way sockWriter does
// (inside the connection's raw write callback).
func zcSendOn(t *testing.T, c *net.TCPConn, z *zcSender, p []byte, rec *uint32) (int, syscall.Errno) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	iov := []iovec{{Base: &p[0]}}
	iov[0].SetLen(len(p))
	var n int
	var errno syscall.Errno
	if err := rc.Write(func(fd uintptr) bool {
		n, errno = z.send(fd, iov, rec)
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
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	for _, end := range []string{"peer reads", "abandoned"} {
		t.Run(end, func(t *testing.T) {
			a, b := tcpPair(t, false)
			_ = b.SetReadBuffer(64 << 10)
			_ = a.SetWriteBuffer(64 << 10)
			released := make(chan []uint16, 1)
			st := &counters{}
			z, _ := newZCSender(func(s []uint16) { released <- append([]uint16(nil), s...) }, st)
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
			if sent == 0 || st.zcSends.Load() == 0 || st.zcBytes.Load() != uint64(sent) {
				t.Fatalf("sent %d bytes, stats %d sends %d bytes", sent, st.zcSends.Load(), st.zcBytes.Load())
			}
			z.reap()
			out, held := z.seal(rec, []uint16{3, 1, 4}, make([]byte, 0, 64))
			if !held {
				t.Fatal("a write whose data still sits in the socket was not held")
			}
			if out == nil || cap(out) != 64 {
				t.Fatalf("next small-PDU buffer: cap %d", cap(out))
			}
			z.reap()
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
					z.wait(time.Until(deadline))
				}
				z.close(time.Second)
				if st.zcAbandoned.Load() != 0 {
					t.Fatal("sender abandoned although every notice was in")
				}
			case "abandoned":
				a.Close() // FIN queued behind the data the peer does not read
				z.close(20 * time.Millisecond)
				if st.zcAbandoned.Load() != 1 || abandonedSenders() == 0 {
					t.Fatalf("abandoned %d, janitor holds %d", st.zcAbandoned.Load(), abandonedSenders())
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
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	a, _ := tcpPair(t, true)
	z, _ := newZCSender(func([]uint16) {}, &counters{})
	defer z.close(time.Second)
	var rec uint32
	n, errno := zcSendOn(t, a, z, []byte("probe"), &rec)
	if errno == 0 && n == 5 {
		t.Skip("this kernel sends zero-copy on MPTCP-accepted sockets")
	}
	if errno != errZCOff || !z.unusable() {
		t.Fatalf("send: %d bytes, errno %v, unusable %v", n, errno, z.unusable())
	}
	if _, held := z.seal(rec, []uint16{1}, nil); held {
		t.Fatal("slots held after a failed probe")
	}
}

// TestZeroCopySendData: with the zero-copy threshold at 4 KiB, rounds of
// 32 pipelined writes (random sizes up to 128 KiB, the same blocks
// rewritten every round) and reads of them: every read returns what the
// round wrote, with and without digests, on a backend that completes
// inline and on io_uring; the reads went out zero-copy.
func TestZeroCopySendData(t *testing.T) {
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	loopbackZC(t)
	for _, backend := range []string{"mem", "file-uring"} {
		for _, dg := range []tcppdu.Digests{{}, {Header: true, Data: true}} {
			t.Run(backend, func(t *testing.T) {
				var be blockdev.Backend
				if backend != "mem" {
					f, err := file.Open(filepath.Join(t.TempDir(), "vol"), file.Options{Size: testBlocks * testBlock})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.Close() })
					be = f
				}
				r := newRigWith(t, be, func(c *Config) { c.ZeroCopySendMin = 4096 })
				admin := r.adminHost(t, dg, 8192)
				h := r.ioHost(t, admin, dg, 8192)
				const qd, rounds = 32, 6
				rng := rand.New(rand.NewPCG(5, 6))
				sizes := []int{4096, 16384, 65536, 131072}
				for round := range rounds {
					h.writeReadBack(rng, qd, sizes, round)
				}
				if st := r.l.Stats(); st.ZeroCopySends == 0 || st.ZeroCopyBytes < qd*4096 || st.ZeroCopyOff {
					t.Fatalf("no zero-copy sends: %+v", st)
				}
			})
		}
	}
}

// TestZeroCopyFullDepth: a host that keeps its queue full while the
// responses go out zero-copy is never taken for one that overruns its
// queue: the slots the sends hold are not counted as its commands, and
// the reader waits for their notices when it runs out of slots.
func TestZeroCopyFullDepth(t *testing.T) {
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	loopbackZC(t)
	r := fullDepthStream(t, func(c *Config) { c.ZeroCopySendMin = 4096 })
	if st := r.l.Stats(); st.ZeroCopySends == 0 {
		t.Fatalf("no zero-copy sends: %+v", st)
	}
}

// loopbackZC lets this test's loopback connections send zero-copy.
func loopbackZC(t *testing.T) {
	zcOnLoopback.Store(true)
	t.Cleanup(func() { zcOnLoopback.Store(false) })
}

// TestZeroCopyOff: a negative ZeroCopySendMin copies every write, and so
// does a connection from a loopback address (the kernel would copy when
// it delivers), whatever the threshold.
func TestZeroCopyOff(t *testing.T) {
	for _, min := range []int{-1, 4096} {
		zcOnLoopback.Store(min < 0)
		r := newRigWith(t, mem.New(testBlocks, testBlock), func(c *Config) { c.ZeroCopySendMin = min })
		admin := r.adminHost(t, tcppdu.Digests{}, 8192)
		h := r.ioHost(t, admin, tcppdu.Digests{}, 8192)
		var sqe nvme.SQE
		sqe.SetRW(nvme.IORead, 1, 0, 256<<10/testBlock, 0)
		if got := h.must(&sqe, nil, 256<<10); len(got) != 256<<10 {
			t.Fatalf("read %d bytes", len(got))
		}
		if st := r.l.Stats(); st.ZeroCopySends != 0 {
			t.Fatalf("ZeroCopySendMin %d, loopback ZC %v: zero-copy sends %+v", min, zcOnLoopback.Load(), st)
		}
	}
	zcOnLoopback.Store(false)
}

// TestZCCopiesDetected: where the kernel reports copies in its notices
// (Linux ≥ 6.2), a connection whose first zcCopiedProbe notices all say
// copied (a peer on this machine) stops sending zero-copy.
func TestZCCopiesDetected(t *testing.T) {
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	a, b := tcpPair(t, false)
	go func() { _, _ = io.Copy(io.Discard, b) }()
	st := &counters{}
	z, _ := newZCSender(func([]uint16) {}, st)
	defer z.close(time.Second)
	p := make([]byte, 8192)
	for range zcCopiedProbe {
		var rec uint32
		if _, errno := zcSendOn(t, a, z, p, &rec); errno != 0 {
			t.Fatal(errno)
		}
		for z.pending() > 0 {
			z.wait(time.Second)
		}
		if _, held := z.seal(rec, nil, nil); held {
			t.Fatal("held after its notice")
		}
	}
	if st.zcCopied.Load() == 0 {
		t.Skip("this kernel does not report copies (IORING_SEND_ZC_REPORT_USAGE, Linux 6.2)")
	}
	if st.zcCopied.Load() != zcCopiedProbe || !z.copies() {
		t.Fatalf("%d of %d notices copied, copies %v", st.zcCopied.Load(), zcCopiedProbe, z.copies())
	}
}

// TestZCSenderBoundsNotices: notices outstanding never reach the size of
// the ring's completion queue (an overflowing CQ keeps completions where
// only a GETEVENTS call finds them): past the bound a send reports
// errZCOff and the write copies; the held writes are all released once
// the peer reads.
func TestZCSenderBoundsNotices(t *testing.T) {
	if !zcWorks(t) {
		t.Skip("no zero-copy send on this kernel")
	}
	a, b := tcpPair(t, false)
	_ = b.SetReadBuffer(64 << 10)
	_ = a.SetWriteBuffer(8 << 20)
	released := 0
	z, _ := newZCSender(func(s []uint16) { released += len(s) }, &counters{})
	defer z.close(time.Second)
	p := make([]byte, 4096)
	held, off, sent := 0, 0, 0
	for i := range 4 * z.cqCap {
		var rec uint32
		n, errno := zcSendOn(t, a, z, p, &rec)
		switch errno {
		case errZCOff:
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
			if _, h := z.seal(rec, []uint16{uint16(i)}, nil); h {
				held++
			}
		}
	}
	if off == 0 || held == 0 {
		t.Fatalf("bound never reached: %d held, %d sends refused", held, off)
	}
	go func() { _, _ = io.CopyN(io.Discard, b, int64(sent)) }()
	deadline := time.Now().Add(10 * time.Second)
	for z.pending() > 0 && time.Now().Before(deadline) {
		z.wait(time.Until(deadline))
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if released != held {
		t.Fatalf("released %d of %d held writes", released, held)
	}
}
