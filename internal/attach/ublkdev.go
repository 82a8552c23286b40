package attach

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmablk/rdmablk/internal/attach/ublkback"
	"github.com/rdmablk/rdmablk/internal/nbsys"
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
	nbsys.ReserveP(b.Geometry().Queues)
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
