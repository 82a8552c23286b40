//go:build !linux

package nbsys

import "syscall"

// WatchParked: no parked set here (parked_linux.go); nothing spins.
func WatchParked(fd int, events uint32) error { return syscall.ENOSYS }

// UnwatchParked: no parked set here.
func UnwatchParked(fd int) {}

// UseParked: no parked set here.
func UseParked() {}
