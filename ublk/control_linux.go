package ublk

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// ControlPath is the ublk driver's control device.
const ControlPath = "/dev/ublk-control"

// ErrNoUblk: this kernel has no ublk driver loaded (no /dev/ublk-control;
// `modprobe ublk_drv`, Linux ≥ 6.0).
var ErrNoUblk = errors.New("ublk: " + ControlPath + " not present (modprobe ublk_drv; Linux 6.0 or later)")

// Available reports whether the ublk driver is loaded (the control device
// exists): the CLI's default frontend is ublk when it is, NBD otherwise.
func Available() bool {
	_, err := os.Stat(ControlPath)
	return err == nil
}

// Control sends the driver's control commands (UBLK_U_CMD_*) as
// IORING_OP_URING_CMD on /dev/ublk-control, one at a time, each waiting
// for its completion. Safe for concurrent use (calls are serialised). Some
// commands block in the kernel: START_DEV and END_USER_RECOVERY until
// every queue has fetched its tags, DEL_DEV until the device is released.
type Control struct {
	mu   sync.Mutex // guards ring and buf
	f    *os.File
	ring *uring.Ring128
	buf  []byte // data area for commands (dev_info, params): read/written by the kernel
	cqe  [1]uring.CQE
}

// OpenControl opens /dev/ublk-control. It returns ErrNoUblk when the
// driver is not loaded.
func OpenControl() (*Control, error) {
	f, err := os.OpenFile(ControlPath, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoUblk
	}
	if err != nil {
		return nil, fmt.Errorf("ublk: %w", err)
	}
	r, err := uring.NewSQE128(4, 0)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("ublk: control ring: %w", err)
	}
	return &Control{f: f, ring: r, buf: make([]byte, 4096)}, nil
}

// Close closes the control device.
func (c *Control) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring.Close()
	return c.f.Close()
}

// do runs one control command. dataLen bytes of c.buf are passed by
// address (in and/or out). Caller holds c.mu.
func (c *Control) do(op uint32, devID uint32, dataLen int, data uint64) error {
	e := c.ring.Next()
	if e == nil {
		return fmt.Errorf("ublk: %s: control ring full", cmdName(op))
	}
	e.Opcode = uring.OpURingCmd
	e.FD = int32(c.f.Fd())
	e.SetCmdOp(op)
	cc := ctrlCmd{devID: devID, queueID: 0xffff, data: data}
	if dataLen > 0 {
		cc.len = uint16(dataLen)
		cc.addr = uint64(uintptr(unsafe.Pointer(&c.buf[0])))
	}
	cc.encode(e.Cmd[:])
	if _, err := c.ring.SubmitAndWait(1); err != nil {
		return fmt.Errorf("ublk: %s: %w", cmdName(op), err)
	}
	if err := c.ring.Wait(); err != nil {
		return fmt.Errorf("ublk: %s: %w", cmdName(op), err)
	}
	c.ring.Reap(c.cqe[:])
	runtime.KeepAlive(c.buf)
	if res := c.cqe[0].Res; res < 0 {
		return &CmdError{Cmd: cmdName(op), DevID: devID, Errno: syscall.Errno(-res)}
	}
	return nil
}

// CmdError is a control command the driver refused.
type CmdError struct {
	Cmd   string
	DevID uint32
	Errno syscall.Errno
}

func (e *CmdError) Error() string {
	if e.DevID == ^uint32(0) {
		return fmt.Sprintf("ublk: %s: %v", e.Cmd, e.Errno)
	}
	return fmt.Sprintf("ublk: %s device %d: %v", e.Cmd, e.DevID, e.Errno)
}

func (e *CmdError) Unwrap() error { return e.Errno }

// AddDev creates a device (ADD_DEV) from want (DevID ^0: any free id)
// and returns the driver's answer: the id, and the queue count, buffer
// size and flags it granted.
func (c *Control) AddDev(want DevInfo) (DevInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	want.encode(c.buf)
	if err := c.do(uCmdAddDev, want.DevID, devInfoSize, 0); err != nil {
		return DevInfo{}, err
	}
	return decodeDevInfo(c.buf[:devInfoSize])
}

// GetDevInfo returns a device's dev_info (GET_DEV_INFO).
func (c *Control) GetDevInfo(id uint32) (DevInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.buf[:devInfoSize])
	if err := c.do(uCmdGetDevInfo, id, devInfoSize, 0); err != nil {
		return DevInfo{}, err
	}
	return decodeDevInfo(c.buf[:devInfoSize])
}

// SetParams sets a device's parameters before START_DEV (SET_PARAMS).
func (c *Control) SetParams(id uint32, p *Params) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.encode(c.buf)
	return c.do(uCmdSetParams, id, paramsSize, 0)
}

// GetParams reads a device's parameters, devt included (GET_PARAMS).
func (c *Control) GetParams(id uint32) (Params, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.buf[:paramsSize])
	ne.PutUint32(c.buf[0:], paramsSize)
	if err := c.do(uCmdGetParams, id, paramsSize, 0); err != nil {
		return Params{}, err
	}
	return decodeParams(c.buf[:paramsSize])
}

// StartDev exposes /dev/ublkb<id> (START_DEV); pid is the server's. It
// blocks until every queue has fetched all its tags.
func (c *Control) StartDev(id uint32, pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(uCmdStartDev, id, 0, uint64(pid))
}

// StopDev removes /dev/ublkb<id> (STOP_DEV): I/O in flight completes,
// then the queues' commands end with ABORT.
func (c *Control) StopDev(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(uCmdStopDev, id, 0, 0)
}

// DelDev deletes the device (DEL_DEV); it waits until the id is free,
// which is when the last opener of /dev/ublkb<id> (a mounted filesystem,
// a process holding it open) lets go — possibly never.
func (c *Control) DelDev(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(uCmdDelDev, id, 0, 0)
}

// DelDevAsync deletes the device without waiting for its last opener
// (DEL_DEV_ASYNC, Linux ≥ 6.9); the id is freed when that one closes. On
// older kernels it falls back to DelDev.
func (c *Control) DelDevAsync(id uint32) error {
	c.mu.Lock()
	err := c.do(uCmdDelDevAsync, id, 0, 0)
	c.mu.Unlock()
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL) {
		return c.DelDev(id)
	}
	return err
}

// StartUserRecovery prepares a quiesced device (its server gone) for a
// new server (START_USER_RECOVERY). EBUSY: the old server's files are
// still open or the device is not quiesced yet.
func (c *Control) StartUserRecovery(id uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(uCmdStartUserRecovery, id, 0, 0)
}

// EndUserRecovery resumes I/O on a recovered device (END_USER_RECOVERY);
// pid is the new server's. It blocks until every queue has fetched.
func (c *Control) EndUserRecovery(id uint32, pid int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.do(uCmdEndUserRecovery, id, 0, uint64(pid))
}

// Features returns the UBLK_F_* flags the driver supports (GET_FEATURES,
// Linux ≥ 6.5).
func (c *Control) Features() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.buf[:8])
	if err := c.do(uCmdGetFeatures, ^uint32(0), 8, 0); err != nil {
		return 0, err
	}
	return ne.Uint64(c.buf[0:]), nil
}
