package attach

import (
	"errors"
	"strings"
	"testing"
)

// SetUblkProbe replaces the host probe for frontend selection (tests in
// package attach_test); it returns the restore function.
func SetUblkProbe(available, root bool, modprobe func() error) func() {
	old := hostProbe
	hostProbe = ublkProbe{available: func() bool { return available }, root: root, modprobe: modprobe}
	return func() { hostProbe = old }
}

// TestChooseFrontend: auto picks ublk only when the control device is
// there (after one modprobe as root), else nbd with the reason; ublk
// asked for and absent is an error naming the fix; nbd is never probed.
func TestChooseFrontend(t *testing.T) {
	loaded := false
	calls := 0
	modOK := func() error { calls++; loaded = true; return nil }
	modFail := func() error {
		calls++
		return errors.New("modprobe ublk_drv: exit status 1: FATAL: Module ublk_drv not found")
	}
	for _, c := range []struct {
		name       string
		want       string
		avail      bool
		root       bool
		mod        func() error
		frontend   string
		reason     string // substring
		err        string // substring; "" no error
		modprobes  int
		loadedOnce bool
	}{
		{name: "auto-present", want: "auto", avail: true, root: true, mod: modFail, frontend: "ublk", reason: "/dev/ublk-control present"},
		{name: "empty-is-auto", want: "", avail: true, root: true, frontend: "ublk", reason: "present"},
		{name: "auto-present-user", want: "auto", avail: true, frontend: "nbd", reason: "needs root"},
		{name: "ublk-present-user", want: "ublk", avail: true, frontend: "ublk", reason: "present"},
		{name: "auto-absent-user", want: "auto", frontend: "nbd", reason: "as root: modprobe ublk_drv"},
		{name: "auto-absent-root-modprobe-fails", want: "auto", root: true, mod: modFail, frontend: "nbd", reason: "Module ublk_drv not found", modprobes: 1},
		{name: "auto-absent-root-modprobe-loads", want: "auto", root: true, mod: modOK, frontend: "ublk", reason: "loaded ublk_drv", modprobes: 1, loadedOnce: true},
		{name: "ublk-absent-user", want: "ublk", err: "--frontend ublk: /dev/ublk-control missing"},
		{name: "ublk-absent-root", want: "ublk", root: true, mod: modFail, err: "Module ublk_drv not found", modprobes: 1},
		{name: "nbd", want: "nbd", avail: true, root: true, mod: modFail, frontend: "nbd", reason: "requested"},
		{name: "bad", want: "iscsi", err: "unknown frontend"},
	} {
		t.Run(c.name, func(t *testing.T) {
			loaded, calls = false, 0
			p := ublkProbe{available: func() bool { return c.avail || loaded }, root: c.root, modprobe: c.mod}
			if p.modprobe == nil {
				p.modprobe = func() error { t.Fatal("modprobe called"); return nil }
			}
			f, why, err := chooseFrontend(c.want, p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
			} else if err != nil || f != c.frontend || !strings.Contains(why, c.reason) {
				t.Fatalf("got %q %q %v, want %q with a reason containing %q", f, why, err, c.frontend, c.reason)
			}
			if calls != c.modprobes || loaded != c.loadedOnce {
				t.Fatalf("modprobe called %d times (loaded %v), want %d", calls, loaded, c.modprobes)
			}
		})
	}
}
