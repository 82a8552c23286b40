package soft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// flakyListener fails Accept with err n times, then passes through.
type flakyListener struct {
	net.Listener
	err   error
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, l.err
	}
	return l.Listener.Accept()
}

// tryConnect connects a fresh QP of p to addr; the passive side's answer
// decides the error (a consumer reject is what acceptAndReject sends).
func tryConnect(ctx context.Context, p *Provider, addr string) error {
	return tryConnectFrom(ctx, p, addr, "")
}

// tryConnectFrom is tryConnect from local address local.
func tryConnectFrom(ctx context.Context, p *Provider, addr, local string) error {
	id, err := p.Resolve(ctx, addr, verbs.ResolveOptions{LocalAddr: local})
	if err != nil {
		return err
	}
	defer id.Close()
	d := id.Device()
	pd, err := d.AllocPD()
	if err != nil {
		return err
	}
	defer pd.Close()
	cq, err := d.CreateCQ(4, 0)
	if err != nil {
		return err
	}
	defer cq.Close()
	qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	defer qp.Close()
	_, err = id.Connect(ctx, verbs.ConnParam{PrivateData: []byte("hello")})
	return err
}

// acceptAndReject answers the next connect request on ln with a consumer
// reject carrying "seen".
func acceptAndReject(ctx context.Context, ln verbs.Listener) error {
	req, err := ln.Accept(ctx)
	if err != nil {
		return err
	}
	defer req.ID.Close()
	return req.ID.Reject([]byte("seen"))
}

// connectsDespite checks that a host connects to a listener whose socket
// Accept failed with err several times first.
func connectsDespite(t *testing.T, acceptErr error) {
	var logs bytes.Buffer
	var fl *flakyListener
	p := New(Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		listen: func(network, addr string) (net.Listener, error) {
			ln, err := net.Listen(network, addr)
			if err != nil {
				return nil, err
			}
			fl = &flakyListener{Listener: ln, err: acceptErr}
			fl.fails.Store(5)
			return fl, nil
		},
	})
	defer p.Close()
	ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- acceptAndReject(ctx, ln) }()
	err = tryConnect(ctx, p, ln.Addr())
	var rej *verbs.RejectError
	if !errors.As(err, &rej) || !rej.Consumer || !bytes.HasPrefix(rej.PrivateData, []byte("seen")) {
		t.Fatalf("connect after %v: %v, want the listener's consumer reject", acceptErr, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("accept side: %v", err)
	}
	if n := ln.(*listener).AcceptErrors(); n != 5 {
		t.Errorf("AcceptErrors = %d, want 5", n)
	}
	if !bytes.Contains(logs.Bytes(), []byte("accept failed; retrying")) {
		t.Errorf("no log line about the accept errors; log:\n%s", logs.String())
	}
	if c := bytes.Count(logs.Bytes(), []byte("accept failed")); c != 1 {
		t.Errorf("%d log lines for 5 errors in a burst, want 1 (rate-limited)", c)
	}
}

// Issue 10 item 1: an accept error ends nothing; the loop backs off and a
// host connects once the pressure is gone.
func TestListenerRetriesAcceptErrors(t *testing.T) {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM} {
		t.Run(e.(syscall.Errno).Error(), func(t *testing.T) {
			connectsDespite(t, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", e)})
		})
	}
}

// A closed listener still ends the loop (the provider's Close waits for
// it: a leak would hang here).
func TestListenerCloseEndsAcceptLoop(t *testing.T) {
	p := New(Options{})
	ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := ln.Accept(ctx); !errors.Is(err, verbs.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	p.Close()
}

const rlimitChildEnv = "SOFT_TEST_RLIMIT_CHILD"

// Issue 10 item 1 with a real file descriptor limit: in a child process
// (the limit must not touch the other tests) the soft RLIMIT_NOFILE is
// lowered, every descriptor is used up, a TCP connection makes the
// listener's accept(2) fail with EMFILE, and once the descriptors are
// released a host connects.
func TestListenerSurvivesEMFILE(t *testing.T) {
	if os.Getenv(rlimitChildEnv) == "1" {
		if err := emfileChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestListenerSurvivesEMFILE$", "-test.count=1")
	cmd.Env = append(os.Environ(), rlimitChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("PASS")) {
		t.Fatalf("child did not run the test:\n%s", out)
	}
}

func emfileChild() error {
	var logs bytes.Buffer
	p := New(Options{Logger: slog.New(slog.NewTextHandler(io.MultiWriter(&logs, os.Stderr), nil))})
	defer p.Close()
	ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
	if err != nil {
		return err
	}
	defer ln.Close()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	// Headroom for the runtime; the hog below takes everything else.
	low := lim
	low.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		return err
	}
	var hog []*os.File
	release := func() {
		for _, f := range hog {
			f.Close()
		}
		hog = nil
	}
	defer release()
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				return fmt.Errorf("hogging descriptors: %v", err)
			}
			break
		}
		hog = append(hog, f)
	}
	// One descriptor for the dialing side; none left for accept(2).
	hog[len(hog)-1].Close()
	hog = hog[:len(hog)-1]
	raw, err := net.Dial("tcp", ln.Addr())
	if err != nil {
		return fmt.Errorf("dial with one free descriptor: %v", err)
	}
	l := ln.(*listener)
	deadline := time.Now().Add(20 * time.Second)
	for l.AcceptErrors() == 0 {
		if time.Now().After(deadline) {
			return errors.New("accept never failed with EMFILE")
		}
		time.Sleep(time.Millisecond)
	}
	raw.Close()
	release()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- acceptAndReject(ctx, ln) }()
	// The raw connection may still be in the listener's backlog and be
	// accepted first; its handshake fails on its own.
	err = tryConnect(ctx, p, ln.Addr())
	var rej *verbs.RejectError
	if !errors.As(err, &rej) || !rej.Consumer {
		return fmt.Errorf("connect after the descriptors were released: %v", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("accept side: %v", err)
	}
	if !bytes.Contains(logs.Bytes(), []byte("too many open files")) {
		return fmt.Errorf("EMFILE not logged:\n%s", logs.String())
	}
	return nil
}

// Issue 10 item 2, soft side: connections that never send their connect
// request are capped per peer host (each holds a descriptor and a
// goroutine for up to handshakeTimeout); other hosts still connect.
func TestListenerCapsSilentConnections(t *testing.T) {
	p := New(Options{})
	defer p.Close()
	ln, err := p.Listen("127.0.0.1:0", verbs.ListenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var silent []net.Conn
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range maxPendingPerHost + 1 {
		c, err := net.Dial("tcp", ln.Addr())
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// The connection over the cap is closed without waiting for the
	// handshake timeout.
	last := silent[len(silent)-1]
	last.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := last.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection over the cap: read %v, want EOF", err)
	}
	l := ln.(*listener)
	if n := l.Refused(); n != 1 {
		t.Fatalf("Refused = %d, want 1", n)
	}
	// A host from another address is not affected.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- acceptAndReject(ctx, ln) }()
	other := New(Options{})
	defer other.Close()
	err = tryConnectFrom(ctx, other, ln.Addr(), "127.0.0.2")
	var rej *verbs.RejectError
	if !errors.As(err, &rej) || !rej.Consumer {
		t.Fatalf("connect from another host during the flood: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
