package attach

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/rdmablk/rdmablk/ublk"
)

// Frontends: how an attachment's namespace reaches the block layer.
const (
	// FrontendAuto is ublk when the ublk driver is present (after one
	// `modprobe ublk_drv` attempt as root), else NBD.
	FrontendAuto = "auto"
	// FrontendUblk is /dev/ublkbN (Linux ≥ 6.0, module ublk_drv).
	FrontendUblk = "ublk"
	// FrontendNBD is an NBD export and /dev/nbdX (module nbd).
	FrontendNBD = "nbd"
)

// ublkProbe is what frontend selection needs from the host; tests fake it.
type ublkProbe struct {
	available func() bool  // /dev/ublk-control exists
	root      bool         // may load modules
	modprobe  func() error // loads ublk_drv
}

// ublkControl is the ublk driver's control device (ublk.ControlPath).
const ublkControl = "/dev/ublk-control"

var hostProbe = ublkProbe{available: ublk.Available, root: os.Geteuid() == 0, modprobe: modprobeUblkOnce}

var (
	modprobeOnce sync.Once
	modprobeErr  error
)

// modprobeUblkOnce runs `modprobe ublk_drv` at most once per process.
func modprobeUblkOnce() error {
	modprobeOnce.Do(func() {
		out, err := exec.Command("modprobe", "ublk_drv").CombinedOutput()
		if err != nil {
			modprobeErr = fmt.Errorf("modprobe ublk_drv: %v: %s", err, strings.TrimSpace(string(out)))
		}
	})
	return modprobeErr
}

// chooseFrontend resolves the configured frontend (want: "", auto, ublk,
// nbd) to ublk or nbd, with the reason in words (printed by connect and
// kept in Status.FrontendNote). ublk asked for explicitly and absent is
// an error naming the fix.
func chooseFrontend(want string, p ublkProbe) (frontend, reason string, err error) {
	switch want {
	case FrontendNBD:
		return FrontendNBD, "requested (--frontend nbd)", nil
	case "", FrontendAuto, FrontendUblk:
	default:
		return "", "", fmt.Errorf("attach: unknown frontend %q (want auto, ublk or nbd)", want)
	}
	if p.available() {
		if !p.root && want != FrontendUblk {
			// ADD_DEV needs CAP_SYS_ADMIN; the NBD export works without.
			return FrontendNBD, "ublk unavailable: creating /dev/ublkbN needs root (CAP_SYS_ADMIN)", nil
		}
		return FrontendUblk, ublkControl + " present", nil
	}
	var why string
	switch {
	case !p.root:
		why = ublkControl + " missing: the ublk_drv module is not loaded (as root: modprobe ublk_drv; Linux ≥ 6.0)"
	default:
		if err := p.modprobe(); err != nil {
			why = ublkControl + " missing and " + err.Error() + " (ublk needs Linux ≥ 6.0 with CONFIG_BLK_DEV_UBLK)"
		} else if p.available() {
			return FrontendUblk, "loaded ublk_drv (modprobe ublk_drv)", nil
		} else {
			why = "modprobe ublk_drv succeeded but " + ublkControl + " did not appear"
		}
	}
	if want == FrontendUblk {
		return "", "", fmt.Errorf("attach: --frontend ublk: %s", why)
	}
	return FrontendNBD, "ublk unavailable: " + why, nil
}
