package rdma

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// flakyProvider's listeners fail Accept a number of times before passing
// through, like a provider under descriptor or memory pressure.
type flakyProvider struct {
	*soft.Provider
	fails int32
}

func (p flakyProvider) Listen(addr string, o verbs.ListenOptions) (verbs.Listener, error) {
	ln, err := p.Provider.Listen(addr, o)
	if err != nil {
		return nil, err
	}
	f := &flakyVerbsListener{Listener: ln}
	f.fails.Store(p.fails)
	return f, nil
}

type flakyVerbsListener struct {
	verbs.Listener
	fails atomic.Int32
}

func (l *flakyVerbsListener) Accept(ctx context.Context) (*verbs.ConnRequest, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, syscall.EMFILE
	}
	return l.Listener.Accept(ctx)
}

// Issue 10 item 1 (transport side): the transport's accept loop retries a
// provider's Accept error instead of ending, and counts it.
func TestAcceptLoopRetries(t *testing.T) {
	f := soft.NewFabric()
	tprov := soft.New(soft.Options{Fabric: f})
	hprov := soft.New(soft.Options{Fabric: f, DeviceName: "host0"})
	defer tprov.Close()
	defer hprov.Close()
	core := newFakeCore(1 << 20)
	l, err := Listen(Config{Provider: flakyProvider{tprov, 3}, core: core, Addr: "10.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	h, err := dialRaw(ctx, t, hprov, l.Addr(), rawOpts{qid: 0, depth: 32})
	if err != nil {
		t.Fatalf("connect after Accept errors: %v", err)
	}
	h.close()
	if n := l.Stats().AcceptErrors; n != 3 {
		t.Errorf("AcceptErrors = %d, want 3", n)
	}
	if err := l.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
		t.Fatal(err)
	}
}
