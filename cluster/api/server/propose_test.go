package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// stuckNode is a leader whose raft took the entry but never commits it
// (a stalled replication pipeline): Apply returns only when released.
type stuckNode struct {
	*fakeNode
	entered chan struct{}
	release chan struct{}
	done    chan error // what the late apply returned
}

func (n *stuckNode) Apply(c catalog.Command) (catalog.Result, error) {
	n.entered <- struct{}{}
	<-n.release
	res, err := n.fakeNode.Apply(c)
	n.done <- err
	return res, err
}

// TestProposeBoundedByContext: a proposal on a leader that cannot commit
// returns when its context ends, as outcome unknown, instead of holding
// the proposer (a volume's resync, and with it the volume's shutdown);
// the apply left behind finishes when the node does.
func TestProposeBoundedByContext(t *testing.T) {
	n := &stuckNode{fakeNode: newFakeNode(), entered: make(chan struct{}, 1), release: make(chan struct{}), done: make(chan error, 1)}
	s := New(Options{Node: n})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Propose(ctx, catalog.Command{Op: catalog.OpRegisterNode,
			Node: &catalog.Node{ID: "n2", APIAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"}})
		errc <- err
	}()
	<-n.entered // raft has the entry
	cancel()
	err := <-errc
	if !errors.Is(err, cluster.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Propose on a leader that cannot commit: %v; want outcome unknown, canceled", err)
	}
	close(n.release) // the entry commits after all, and its apply ends
	if err := <-n.done; err != nil {
		t.Fatalf("the late apply: %v", err)
	}
}

// TestAPIApplyBoundedByRequest: an API request's apply on a leader that
// cannot commit ends with the request, as outcome unknown, instead of
// holding its handler.
func TestAPIApplyBoundedByRequest(t *testing.T) {
	n := &stuckNode{fakeNode: newFakeNode(), entered: make(chan struct{}, 1), release: make(chan struct{}), done: make(chan error, 1)}
	s := New(Options{Node: n})
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest(http.MethodPost, "/v1/volumes", nil).WithContext(ctx)
	w := httptest.NewRecorder()
	ok := make(chan bool, 1)
	go func() {
		_, applied := s.apply(w, r, catalog.Command{Op: catalog.OpRegisterNode,
			Node: &catalog.Node{ID: "n2", APIAddr: "127.0.0.1:3", RaftAddr: "127.0.0.1:4"}})
		ok <- applied
	}()
	<-n.entered
	cancel()
	if <-ok {
		t.Fatal("an apply whose request ended reported success")
	}
	if w.Code < 500 {
		t.Fatalf("status %d for an apply of unknown outcome, want a 5xx", w.Code)
	}
	close(n.release)
	if err := <-n.done; err != nil {
		t.Fatalf("the late apply: %v", err)
	}
}
