package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/test/testproc"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestConnectErrorsNameTheCause: the three connect failures a person
// meets first each say what to fix — the subsystem NQN the target does
// not have, the host NQN it does not allow (and --hostnqn), nothing
// listening at the address — and stay matchable with errors.Is/As.
func TestConnectErrorsNameTheCause(t *testing.T) {
	const allowed = "nqn.2026-01.io.rdmablk:allowed"
	const presented = "nqn.2026-01.io.rdmablk:someone-else"
	addr := inProcessTarget(t, soft.ProfileDefault, nil, 1<<20, []string{allowed})
	o := initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), ConnectTimeout: 10 * time.Second,
		HostNQN: presented}
	connectErr := func(addr, nqn string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := initiator.Connect(ctx, addr, nqn, o)
		if err == nil {
			c.Close()
			t.Fatalf("connect %s %s succeeded", addr, nqn)
		}
		return err
	}
	wantText := func(err error, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%q does not say %q", err, p)
			}
		}
	}

	err := connectErr(addr, "nqn.2026-01.io.rdmablk:wrong")
	wantText(err, `no subsystem NQN "nqn.2026-01.io.rdmablk:wrong" at `+addr)
	if strings.Contains(err.Error(), "read only") || !errors.Is(err, nvme.StatusConnectInvalidParam) {
		t.Errorf("wrong NQN: %v", err)
	}

	err = connectErr(addr, testNQN)
	wantText(err, presented, testNQN, addr, "--hostnqn")
	if !errors.Is(err, nvme.StatusConnectInvalidHost) {
		t.Errorf("host not allowed: %v", err)
	}

	free := testproc.FreePort(t)
	err = connectErr(free, testNQN)
	wantText(err, "connection refused", "no NVMe-oF listener at "+free)
	var re *verbs.RejectError
	if strings.Contains(err.Error(), "rejected") || !errors.As(err, &re) {
		t.Errorf("nothing listening: %v", err)
	}
}

// TestOpenSessionFailsFastOnPermanentRefusal: a session to a subsystem
// the target does not have fails with the cause at once, not after the
// connect timeout (the target's Connect answer carries Do Not Retry).
func TestOpenSessionFailsFastOnPermanentRefusal(t *testing.T) {
	addr := inProcessTarget(t, soft.ProfileDefault, nil, 1<<20, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		s, err := initiator.OpenSession(ctx, initiator.SessionOptions{
			Options: initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), ConnectTimeout: 5 * time.Minute},
			SubNQN:  "nqn.2026-01.io.rdmablk:wrong", Paths: []string{addr}, ReconnectDelay: 10 * time.Millisecond,
		})
		if s != nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no subsystem NQN") {
			t.Fatalf("OpenSession: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("OpenSession waited for its connect timeout on a permanent refusal")
	}
}
