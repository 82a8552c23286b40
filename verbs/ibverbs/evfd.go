//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"

	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// evfd integrates one rdma-core event file descriptor (the rdma_cm event
// channel, a CQ completion channel, a device's async fd) with Go's network
// poller: the descriptor is made non-blocking and a duplicate is wrapped
// in an *os.File, so a goroutine waiting for an event is parked in the
// poller instead of blocking an OS thread in read(2), and closing the file
// wakes it. rdma-core keeps the original descriptor and closes it itself.
//
// Why not a goroutine blocked in ibv_get_cq_event: that pins one OS thread
// per CQ for its whole life (a target with hundreds of queues would hold
// hundreds of threads), and it cannot be woken for shutdown except by
// destroying the channel under it.
type evfd struct {
	f  *os.File
	rc syscall.RawConn
}

func newEvfd(fd C.int, name string) (*evfd, error) {
	if e := C.rb_set_nonblock(fd); e != 0 {
		return nil, fmt.Errorf("ibverbs: %s: set non-blocking: %w", name, syscall.Errno(e))
	}
	dup, err := syscall.Dup(int(fd))
	if err != nil {
		return nil, fmt.Errorf("ibverbs: %s: dup: %w", name, err)
	}
	syscall.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ibverbs: %s: %w", name, err)
	}
	// A spinning NVMe/TCP reader stops for this channel's event
	// (internal/nbsys parked set).
	_ = nbsys.WatchParked(dup, nbsys.ParkedIn)
	return &evfd{f: f, rc: rc}, nil
}

// wait calls try until it returns true, parking in the poller while the
// descriptor is not readable. try runs with rdma-core's descriptor
// readable or spuriously (its argument is the duplicate descriptor, of no
// use to it); it returns false when the helper said EAGAIN. wait returns
// an error once close was called. It allocates nothing: a caller that
// waits in a loop makes try once, outside it.
func (e *evfd) wait(try func(uintptr) bool) error {
	return e.rc.Read(try)
}

// close wakes a waiter and returns once no try call is running any more.
func (e *evfd) close() error { return e.f.Close() }
