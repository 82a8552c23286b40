package ublk

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Options tune Create and Recover.
type Options struct {
	// DevID asks for /dev/ublkb<DevID> (Create); -1 (or any negative)
	// takes any free id.
	DevID int
	// Control is an open control device to use; nil opens one (and closes
	// it with the Device).
	Control *Control
	// Wait bounds how long Create waits for /dev/ublkc<id> to appear and
	// Recover for the old server to be gone (default 10 s).
	Wait time.Duration
}

// Device is one ublk device and the server serving it: the control
// device, the char device /dev/ublkc<id>, one goroutine per queue.
type Device struct {
	ctrl     *Control
	ownCtrl  bool
	info     DevInfo
	params   Params
	lim      limits
	cdev     *os.File
	maps     [][]byte // descriptor arrays, per queue
	queues   []*queue
	wg       sync.WaitGroup
	errMu    sync.Mutex // guards errs
	errs     []error
	stopOnce sync.Once
	done     chan struct{} // closed when every queue goroutine has ended
}

// Stats are a device's counters (all queues).
type Stats struct {
	Queues, Depth int
	Requests      uint64 // completed
	Errors        uint64 // completed with an error
	InFlight      int64  // with the backend now
}

// ID is the device id: the N of /dev/ublkbN and /dev/ublkcN.
func (d *Device) ID() uint32 { return d.info.DevID }

// Path is the block device's path.
func (d *Device) Path() string { return fmt.Sprintf("/dev/ublkb%d", d.info.DevID) }

// Info is the kernel's dev_info as of setup (queues, depth, flags).
func (d *Device) Info() DevInfo { return d.info }

// Stats sums the queues' counters. Any goroutine.
func (d *Device) Stats() Stats {
	s := Stats{Queues: len(d.queues), Depth: int(d.info.QueueDepth)}
	for _, q := range d.queues {
		s.Requests += q.nRequests.Load()
		s.Errors += q.nErrors.Load()
		s.InFlight += q.nInflight.Load()
	}
	return s
}

func (o *Options) wait() time.Duration {
	if o.Wait > 0 {
		return o.Wait
	}
	return 10 * time.Second
}

// Create adds a ublk device for b, starts one queue goroutine per queue
// and starts the device: /dev/ublkb<id> exists when it returns. The
// device has UBLK_F_USER_RECOVERY and UBLK_F_USER_RECOVERY_REISSUE: if
// this server dies, the kernel holds (and later reissues) I/O until
// Recover attaches a new server.
func Create(b Backend, o Options) (*Device, error) {
	g := b.Geometry()
	page := os.Getpagesize()
	if g.Queues < 1 || g.Depth < 1 || g.Depth > maxQueueDepth {
		return nil, fmt.Errorf("ublk: %d queues of depth %d (want ≥ 1 queue, depth 1..%d)", g.Queues, g.Depth, maxQueueDepth)
	}
	if g.MaxTransfer < uint32(page) || g.MaxTransfer%uint32(page) != 0 || g.MaxTransfer > 32<<20 {
		return nil, fmt.Errorf("ublk: max transfer %d: want whole pages, up to 32 MiB", g.MaxTransfer)
	}
	if _, _, err := paramsFor(&g, g.MaxTransfer, page); err != nil {
		return nil, err
	}
	d := &Device{ctrl: o.Control}
	if d.ctrl == nil {
		c, err := OpenControl()
		if err != nil {
			return nil, err
		}
		d.ctrl, d.ownCtrl = c, true
	}
	id := ^uint32(0)
	if o.DevID >= 0 {
		id = uint32(o.DevID)
	}
	info, err := d.ctrl.AddDev(DevInfo{
		NrHWQueues:    uint16(min(g.Queues, maxQueues)),
		QueueDepth:    uint16(g.Depth),
		MaxIOBufBytes: g.MaxTransfer,
		DevID:         id,
		Flags:         FlagUserRecovery | FlagUserRecoveryReissue | FlagCmdIoctlEncode,
	})
	if err != nil {
		d.closeCtrl()
		return nil, err
	}
	d.info = info
	fail := func(err error) (*Device, error) {
		d.teardown()
		d.ctrl.DelDev(d.info.DevID)
		d.closeCtrl()
		return nil, err
	}
	if err := checkDevInfo(&info, page); err != nil {
		return fail(err)
	}
	if int(info.NrHWQueues) > g.Queues || int(info.QueueDepth) != g.Depth || info.MaxIOBufBytes > g.MaxTransfer {
		return fail(fmt.Errorf("ublk: device %d: kernel granted %d queues of depth %d, %d-byte buffers for a backend of %d×%d, %d", info.DevID, info.NrHWQueues, info.QueueDepth, info.MaxIOBufBytes, g.Queues, g.Depth, g.MaxTransfer))
	}
	if info.Flags&FlagUserRecovery == 0 {
		return fail(fmt.Errorf("ublk: device %d: the driver refused UBLK_F_USER_RECOVERY (flags %#x)", info.DevID, info.Flags))
	}
	p, lim, err := paramsFor(&g, info.MaxIOBufBytes, page)
	if err != nil {
		return fail(err)
	}
	if err := d.ctrl.SetParams(info.DevID, &p); err != nil {
		return fail(err)
	}
	d.params, d.lim = p, lim
	if err := d.serve(b, o.wait()); err != nil {
		return fail(err)
	}
	if err := d.ctrl.StartDev(info.DevID, os.Getpid()); err != nil {
		return fail(err)
	}
	return d, nil
}

// Recover attaches a new server for b to device id, whose previous server
// died (or Detached): the same /dev/ublkb<id> resumes, and I/O the kernel
// held is reissued to b. It waits (up to Options.Wait) for the driver to
// notice the old server is gone. b must serve the same volume: its block
// size and capacity must match the device's.
func Recover(id uint32, b Backend, o Options) (*Device, error) {
	d := &Device{ctrl: o.Control}
	if d.ctrl == nil {
		c, err := OpenControl()
		if err != nil {
			return nil, err
		}
		d.ctrl, d.ownCtrl = c, true
	}
	fail := func(err error) (*Device, error) {
		d.teardown()
		d.closeCtrl()
		return nil, err
	}
	page := os.Getpagesize()
	deadline := time.Now().Add(o.wait())
	var info DevInfo
	for {
		var err error
		if info, err = d.ctrl.GetDevInfo(id); err != nil {
			return fail(err)
		}
		if info.Flags&FlagUserRecovery == 0 {
			return fail(fmt.Errorf("ublk: device %d was created without UBLK_F_USER_RECOVERY", id))
		}
		if info.State == StateQuiesced {
			err = d.ctrl.StartUserRecovery(id)
			if err == nil {
				break
			}
			if !errors.Is(err, syscall.EBUSY) {
				return fail(err)
			}
		} else if info.State == StateDead {
			return fail(fmt.Errorf("ublk: device %d is not started (or was stopped): nothing to recover", id))
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("ublk: device %d still %s after %v (server pid %d still attached?)", id, stateName(info.State), o.wait(), info.ServerPID))
		}
		time.Sleep(20 * time.Millisecond) // the driver quiesces asynchronously; it has no event to wait on
	}
	d.info = info
	if err := checkDevInfo(&info, page); err != nil {
		return fail(err)
	}
	p, err := d.ctrl.GetParams(id)
	if err != nil {
		return fail(err)
	}
	lim, err := limitsFor(&p, info.MaxIOBufBytes)
	if err != nil {
		return fail(err)
	}
	g := b.Geometry()
	if g.LogicalBlockSize != 1<<p.LogicalBSShift || g.Blocks*uint64(g.LogicalBlockSize/512) != p.DevSectors {
		return fail(fmt.Errorf("ublk: device %d is %d sectors of %d bytes; the backend is %d blocks of %d bytes", id, p.DevSectors, 1<<p.LogicalBSShift, g.Blocks, g.LogicalBlockSize))
	}
	if g.Queues < int(info.NrHWQueues) || g.Depth < int(info.QueueDepth) || g.MaxTransfer < info.MaxIOBufBytes {
		return fail(fmt.Errorf("ublk: device %d needs %d queues of depth %d with %d-byte buffers; the backend has %d×%d, %d", id, info.NrHWQueues, info.QueueDepth, info.MaxIOBufBytes, g.Queues, g.Depth, g.MaxTransfer))
	}
	d.params, d.lim = p, lim
	if err := d.serve(b, o.wait()); err != nil {
		return fail(err)
	}
	if err := d.ctrl.EndUserRecovery(id, os.Getpid()); err != nil {
		return fail(err)
	}
	return d, nil
}

func stateName(s uint16) string {
	switch s {
	case StateDead:
		return "dead"
	case StateLive:
		return "live"
	case StateQuiesced:
		return "quiesced"
	}
	return fmt.Sprintf("state %d", s)
}

// serve opens the char device, maps each queue's descriptors, opens the
// backend queues and starts the queue goroutines; it returns when every
// queue has submitted FETCH_REQ for all its tags.
func (d *Device) serve(b Backend, wait time.Duration) error {
	path := fmt.Sprintf("/dev/ublkc%d", d.info.DevID)
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			d.cdev = f
			break
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return fmt.Errorf("ublk: %w", err)
		}
		time.Sleep(10 * time.Millisecond) // devtmpfs/udev create the node asynchronously
	}
	page := os.Getpagesize()
	depth := int(d.info.QueueDepth)
	areaMax := roundUp(maxQueueDepth*ioDescSize, page)
	area := roundUp(depth*ioDescSize, page)
	ready := make(chan error, d.info.NrHWQueues)
	for qid := range int(d.info.NrHWQueues) {
		m, err := syscall.Mmap(int(d.cdev.Fd()), int64(qid*areaMax), area, syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("ublk: device %d queue %d: mmap descriptors: %w", d.info.DevID, qid, err)
		}
		d.maps = append(d.maps, m)
		r, err := newKring(depth + 3) // + the wake-up read, the backend poll and its cancel
		if err != nil {
			return fmt.Errorf("ublk: device %d queue %d: %w", d.info.DevID, qid, err)
		}
		q := newQueue(uint16(qid), depth, int32(d.cdev.Fd()), r, m[:depth*ioDescSize], &d.lim, d.info.MaxIOBufBytes)
		bq, err := b.OpenQueue(qid, depth, q)
		if err != nil {
			r.closeRing()
			r.closeWaker()
			return fmt.Errorf("ublk: device %d queue %d: backend: %w", d.info.DevID, qid, err)
		}
		q.setBackend(bq)
		d.queues = append(d.queues, q)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			if err := q.run(ready); err != nil {
				d.errMu.Lock()
				d.errs = append(d.errs, err)
				d.errMu.Unlock()
			}
		}()
	}
	var first error
	for range d.queues {
		if err := <-ready; err != nil && first == nil {
			first = err
		}
	}
	if first == nil {
		d.done = make(chan struct{})
		go func() { d.wg.Wait(); close(d.done) }()
	}
	return first
}

// Done is closed when every queue has ended: after Stop or Detach, when
// the device was stopped or deleted by someone else (STOP_DEV from another
// process), or when a queue failed (Err says why; the kernel then holds
// the device's I/O for a Recover).
func (d *Device) Done() <-chan struct{} { return d.done }

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// teardown kills the queues, waits for them and releases the char device
// and mappings (the device itself stays).
func (d *Device) teardown() {
	for _, q := range d.queues {
		q.kill()
	}
	d.wg.Wait()
	d.waitThreadsGone()
	for _, m := range d.maps {
		syscall.Munmap(m)
	}
	d.maps = nil
	if d.cdev != nil {
		d.cdev.Close()
		d.cdev = nil
	}
}

// waitThreadsGone waits (a bounded time) until the queues' OS threads
// have exited: the driver's recovery expects the old queue tasks to be
// exiting, and a queue thread ends only after its goroutine returns.
func (d *Device) waitThreadsGone() {
	deadline := time.Now().Add(10 * time.Second)
	for _, q := range d.queues {
		tid := q.tid.Load()
		if tid == 0 {
			continue
		}
		path := fmt.Sprintf("/proc/self/task/%d", tid)
		for {
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				d.errMu.Lock()
				d.errs = append(d.errs, fmt.Errorf("ublk: device %d queue %d: thread %d did not exit (recovery will warn)", d.info.DevID, q.id, tid))
				d.errMu.Unlock()
				break
			}
			time.Sleep(time.Millisecond) // thread exit has no event to wait on
		}
	}
}

func (d *Device) closeCtrl() {
	if d.ownCtrl {
		d.ctrl.Close()
	}
}

// Err returns the queues' errors so far (nil if none).
func (d *Device) Err() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return errors.Join(d.errs...)
}

// Stop stops and deletes the device (STOP_DEV: requests in flight
// complete, new ones fail; the queues end; DEL_DEV_ASYNC). /dev/ublkb<id>
// is gone when it returns; the id is free once its last opener closes it
// (at once if nobody holds it open).
func (d *Device) Stop() error {
	var err error
	d.stopOnce.Do(func() {
		err = d.ctrl.StopDev(d.info.DevID)
		if err == nil {
			d.wg.Wait() // every tag ends with ABORT
		}
		d.teardown()
		if derr := d.ctrl.DelDevAsync(d.info.DevID); err == nil {
			err = derr
		}
		d.closeCtrl()
		if qerr := d.Err(); err == nil {
			err = qerr
		}
	})
	return err
}

// Detach stops serving without stopping the device, as if the server had
// crashed: the queues drop their requests at once (the kernel requeues
// them), the char device closes, and the kernel holds new I/O until a
// server calls Recover(d.ID(), …). Requests with the backend are waited
// for (their results are discarded).
func (d *Device) Detach() {
	d.stopOnce.Do(func() {
		d.teardown()
		d.closeCtrl()
	})
}

// Remove stops and deletes device id without a server (STOP_DEV, DEL_DEV):
// for a device whose server died and will not come back. I/O the kernel
// held for a recovery fails with EIO; /dev/ublkb<id> goes away. ctrl nil
// opens the control device.
func Remove(id uint32, ctrl *Control) error {
	if ctrl == nil {
		c, err := OpenControl()
		if err != nil {
			return err
		}
		defer c.Close()
		ctrl = c
	}
	if err := ctrl.StopDev(id); err != nil {
		return err
	}
	return ctrl.DelDevAsync(id)
}
