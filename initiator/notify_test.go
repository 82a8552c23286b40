package initiator

import (
	"errors"
	"sync"
	"testing"
)

// chanNotifier is a Notifier that counts its calls and forwards the
// request, as a consumer's completion ring would.
type chanNotifier struct {
	mu    sync.Mutex
	calls map[*Request]int
	ch    chan *Request
}

func (n *chanNotifier) RequestDone(r *Request) {
	n.mu.Lock()
	n.calls[r]++
	n.mu.Unlock()
	n.ch <- r
}

// TestRequestNotify: a request with Notify and no Done channel completes
// through RequestDone exactly once — after its commands ran (a split
// read of four commands, data delivered), and inside Submit for a request
// refused at once (unaligned); a request with neither is refused.
func TestRequestNotify(t *testing.T) {
	r := newFakeRig(t, 4, 512, 1024, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i*3 + 1)
	}
	n := &chanNotifier{calls: map[*Request]int{}, ch: make(chan *Request, 4)}
	req := &Request{Op: IORead, Data: make([]byte, 4*4096), Notify: n}
	if err := r.ns.Submit(req); err != nil {
		t.Fatal(err)
	}
	if got := <-n.ch; got != req || got.Err != nil || got.N != len(req.Data) {
		t.Fatalf("completed %p err %v N %d, want %p nil %d", got, got.Err, got.N, req, len(req.Data))
	}
	for i, b := range req.Data {
		if b != r.qp.disk[i] {
			t.Fatalf("byte %d: %#x, want %#x", i, b, r.qp.disk[i])
		}
	}

	bad := &Request{Op: IOWrite, Off: 100, Data: make([]byte, 512), Notify: n}
	if err := r.ns.Submit(bad); err != nil {
		t.Fatal(err)
	}
	select { // completed before Submit returned
	case got := <-n.ch:
		if got != bad || !errors.Is(got.Err, ErrUnaligned) {
			t.Fatalf("completed %p with %v, want %p with ErrUnaligned", got, got.Err, bad)
		}
	default:
		t.Fatal("a refused request did not complete inside Submit")
	}
	n.mu.Lock()
	if n.calls[req] != 1 || n.calls[bad] != 1 || len(n.calls) != 2 {
		t.Fatalf("RequestDone calls %v, want one per request", n.calls)
	}
	n.mu.Unlock()

	if err := r.ns.Submit(&Request{Op: IORead, Data: make([]byte, 512)}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Submit without Done or Notify: %v, want ErrInvalid", err)
	}
}
