package cluster

import (
	"io"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// fsm is the raft state machine over the catalogue.
type fsm struct {
	mu sync.RWMutex // guards st
	st *catalog.State

	wmu      sync.Mutex // guards watchers
	watchers map[chan struct{}]struct{}
}

// applyResult is what fsm.Apply returns through raft's ApplyFuture.
type applyResult struct {
	res catalog.Result
	err error
}

func newFSM() *fsm {
	return &fsm{st: catalog.New(), watchers: map[chan struct{}]struct{}{}}
}

// Apply is called by raft, in log order, for every committed command.
func (f *fsm) Apply(l *raft.Log) interface{} {
	c, err := catalog.DecodeCommand(l.Data)
	var res catalog.Result
	f.mu.Lock()
	if err == nil {
		res, err = f.st.Apply(c)
	}
	f.st.Index = l.Index
	f.mu.Unlock()
	f.notify()
	return applyResult{res, err}
}

// Snapshot is called by raft; the copy is taken under the read lock, so
// Persist can run concurrently with Apply.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	c := f.st.Clone()
	f.mu.RUnlock()
	return fsmSnapshot{c}, nil
}

// Restore replaces the whole state with the snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	st, err := catalog.ReadSnapshot(rc)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	f.notify()
	return nil
}

func (f *fsm) notify() {
	f.wmu.Lock()
	for ch := range f.watchers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	f.wmu.Unlock()
}

func (f *fsm) watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	ch <- struct{}{} // the first read is always due
	f.wmu.Lock()
	f.watchers[ch] = struct{}{}
	f.wmu.Unlock()
	return ch, func() {
		f.wmu.Lock()
		delete(f.watchers, ch)
		f.wmu.Unlock()
	}
}

type fsmSnapshot struct{ st *catalog.State }

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.st.WriteSnapshot(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (fsmSnapshot) Release() {}
