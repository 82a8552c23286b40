package attach

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/rdmablk/rdmablk/internal/attach/ublkback"
	"github.com/rdmablk/rdmablk/ublk"
)

// startUblk serves the session as /dev/ublkbN. When the previous
// incarnation of this attachment (prev, from its state file: a process
// that died without Stop) left a ublk device, it is recovered — the same
// /dev/ublkbN, the kernel's held I/O reissued — else a new one is created
// (with the old id when there was one, or the one cfg.Device names).
func (a *Attachment) startUblk(prev *state) error {
	b, err := ublkback.New(a.sess)
	if err != nil {
		return err
	}
	ublkProcs(b.Geometry().Queues)
	o := ublk.Options{DevID: -1}
	if prev != nil && prev.Ublk {
		d, err := ublk.Recover(prev.UblkID, b, o)
		if err == nil {
			a.udev = d
			a.log.Info("recovered ublk device", "device", d.Path())
			return nil
		}
		if !errors.Is(err, syscall.ENODEV) {
			return fmt.Errorf("attach: recover /dev/ublkb%d of the previous run: %w (rdmablk disconnect %s removes it)", prev.UblkID, err, a.cfg.Name)
		}
		a.log.Info("ublk device of the previous run is gone; creating", "id", prev.UblkID)
		o.DevID = int(prev.UblkID)
	}
	if id, ok := strings.CutPrefix(a.cfg.Device, "/dev/ublkb"); ok {
		n, err := strconv.ParseUint(id, 10, 31)
		if err != nil {
			return fmt.Errorf("attach: device %q: want /dev/ublkbN", a.cfg.Device)
		}
		o.DevID = int(n)
	} else if a.cfg.Device != "auto" {
		return fmt.Errorf("attach: device %q is not a ublk device (want auto or /dev/ublkbN with --frontend ublk)", a.cfg.Device)
	}
	d, err := ublk.Create(b, o)
	if err != nil {
		return err
	}
	a.udev = d
	a.log.Info("created ublk device", "device", d.Path(), "queues", d.Info().NrHWQueues, "depth", d.Info().QueueDepth)
	return nil
}

// ublkQueues counts the ublk queue threads this process has started
// (every attachment's, never decremented: a P left over is harmless).
// ublkProcsMu guards it and the GOMAXPROCS check and set (two
// attachments starting at once must not lower it).
var (
	ublkProcsMu sync.Mutex
	ublkQueues  int
)

// ublkProcs raises GOMAXPROCS to one P per ublk queue thread of the
// process plus one. A queue thread sleeps in io_uring_enter as a
// blocking system call; when no P is left idle, the runtime's monitor
// takes the sleeping thread's P after ~20 µs and starts a spinning thread
// to look for work (runtime handoffp: no idle P, no spinning M), which
// finds none and sleeps again, and the queue thread then waits for a P
// when it wakes: thread wake-ups per sleep for nothing (on a one-vCPU
// guest, runtime.schedule/findRunnable/futex were ~20 % of the
// attachment's CPU). With a P idle the monitor leaves a system call
// shorter than 10 ms alone (runtime retake) and the thread goes on with
// its own P. GOMAXPROCS is only raised; the CPUs the process may run on
// are unchanged, so this adds no parallelism, only Ps that stay idle.
func ublkProcs(queues int) {
	ublkProcsMu.Lock()
	defer ublkProcsMu.Unlock()
	ublkQueues += queues
	if want := ublkQueues + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// RemoveStaleUblk stops and deletes the ublk device a dead attachment
// left (its state file names it): the I/O the kernel held for a recovery
// then fails with EIO. Called by Disconnect when the attachment's process
// is gone.
func removeStaleUblk(st state) error {
	if !st.Ublk {
		return nil
	}
	if err := ublk.Remove(st.UblkID, nil); err != nil && !errors.Is(err, syscall.ENODEV) {
		return fmt.Errorf("attach: remove /dev/ublkb%d: %w", st.UblkID, err)
	}
	return nil
}
