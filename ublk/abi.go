package ublk

import (
	"encoding/binary"
	"fmt"
)

// The ublk kernel ABI (include/uapi/linux/ublk_cmd.h), as of Linux 6.12.
// Structures are encoded and decoded as byte views at the header's
// offsets, in the host's byte order (the ABI is native-endian).

var ne = binary.NativeEndian

// Command numbers (_IOC_NR of the ioctl-encoded opcodes).
const (
	cmdGetDevInfo        = 0x02
	cmdAddDev            = 0x04
	cmdDelDev            = 0x05
	cmdStartDev          = 0x06
	cmdStopDev           = 0x07
	cmdSetParams         = 0x08
	cmdGetParams         = 0x09
	cmdStartUserRecovery = 0x10
	cmdEndUserRecovery   = 0x11
	cmdGetFeatures       = 0x13
	cmdDelDevAsync       = 0x14

	ioFetchReq          = 0x20
	ioCommitAndFetchReq = 0x21
)

// ioctl direction bits (asm-generic/ioctl.h).
const (
	iocWrite = 1
	iocRead  = 2
)

// ioc encodes an ioctl number: dir<<30 | size<<16 | type<<8 | nr.
func ioc(dir, typ, nr, size uint32) uint32 { return dir<<30 | size<<16 | typ<<8 | nr }

const ublkType = 'u'

// Sizes of the ABI structures.
const (
	ctrlCmdSize = 32  // struct ublksrv_ctrl_cmd
	devInfoSize = 64  // struct ublksrv_ctrl_dev_info
	ioDescSize  = 24  // struct ublksrv_io_desc
	ioCmdSize   = 16  // struct ublksrv_io_cmd
	paramsSize  = 112 // struct ublk_params (6.12: header, basic, discard, devt, zoned)
)

// Control opcodes (UBLK_U_CMD_*), ioctl-encoded over struct ublksrv_ctrl_cmd.
var (
	uCmdGetDevInfo        = ioc(iocRead, ublkType, cmdGetDevInfo, ctrlCmdSize)
	uCmdAddDev            = ioc(iocRead|iocWrite, ublkType, cmdAddDev, ctrlCmdSize)
	uCmdDelDev            = ioc(iocRead|iocWrite, ublkType, cmdDelDev, ctrlCmdSize)
	uCmdStartDev          = ioc(iocRead|iocWrite, ublkType, cmdStartDev, ctrlCmdSize)
	uCmdStopDev           = ioc(iocRead|iocWrite, ublkType, cmdStopDev, ctrlCmdSize)
	uCmdSetParams         = ioc(iocRead|iocWrite, ublkType, cmdSetParams, ctrlCmdSize)
	uCmdGetParams         = ioc(iocRead, ublkType, cmdGetParams, ctrlCmdSize)
	uCmdStartUserRecovery = ioc(iocRead|iocWrite, ublkType, cmdStartUserRecovery, ctrlCmdSize)
	uCmdEndUserRecovery   = ioc(iocRead|iocWrite, ublkType, cmdEndUserRecovery, ctrlCmdSize)
	uCmdGetFeatures       = ioc(iocRead, ublkType, cmdGetFeatures, ctrlCmdSize)
	uCmdDelDevAsync       = ioc(iocRead, ublkType, cmdDelDevAsync, ctrlCmdSize)

	uIOFetchReq          = ioc(iocRead|iocWrite, ublkType, ioFetchReq, ioCmdSize)
	uIOCommitAndFetchReq = ioc(iocRead|iocWrite, ublkType, ioCommitAndFetchReq, ioCmdSize)
)

// cmdName names a control or I/O opcode for error messages.
func cmdName(op uint32) string {
	switch op {
	case uCmdGetDevInfo:
		return "GET_DEV_INFO"
	case uCmdAddDev:
		return "ADD_DEV"
	case uCmdDelDev:
		return "DEL_DEV"
	case uCmdStartDev:
		return "START_DEV"
	case uCmdStopDev:
		return "STOP_DEV"
	case uCmdSetParams:
		return "SET_PARAMS"
	case uCmdGetParams:
		return "GET_PARAMS"
	case uCmdStartUserRecovery:
		return "START_USER_RECOVERY"
	case uCmdEndUserRecovery:
		return "END_USER_RECOVERY"
	case uCmdGetFeatures:
		return "GET_FEATURES"
	case uCmdDelDevAsync:
		return "DEL_DEV_ASYNC"
	case uIOFetchReq:
		return "FETCH_REQ"
	case uIOCommitAndFetchReq:
		return "COMMIT_AND_FETCH_REQ"
	}
	return fmt.Sprintf("cmd %#x", op)
}

// Results of FETCH_REQ / COMMIT_AND_FETCH_REQ completions.
const (
	ioResOK    = 0
	ioResAbort = -19 // -ENODEV: the queue is going away; do not fetch again
)

// Device flags (UBLK_F_*), negotiated by ADD_DEV.
const (
	FlagURingCmdCompInTask  = 1 << 1 // UBLK_F_URING_CMD_COMP_IN_TASK (forced by the kernel)
	FlagNeedGetData         = 1 << 2 // UBLK_F_NEED_GET_DATA
	FlagUserRecovery        = 1 << 3 // UBLK_F_USER_RECOVERY
	FlagUserRecoveryReissue = 1 << 4 // UBLK_F_USER_RECOVERY_REISSUE
	FlagUnprivilegedDev     = 1 << 5 // UBLK_F_UNPRIVILEGED_DEV
	FlagCmdIoctlEncode      = 1 << 6 // UBLK_F_CMD_IOCTL_ENCODE
	FlagUserCopy            = 1 << 7 // UBLK_F_USER_COPY
)

// Device states (ublksrv_ctrl_dev_info.state).
const (
	StateDead     = 0 // UBLK_S_DEV_DEAD: added, not started (or stopped)
	StateLive     = 1 // UBLK_S_DEV_LIVE: serving I/O
	StateQuiesced = 2 // UBLK_S_DEV_QUIESCED: server gone, I/O held for recovery
)

// I/O operations (ublksrv_io_desc.op_flags bits 0-7).
const (
	iodOpRead        = 0
	iodOpWrite       = 1
	iodOpFlush       = 2
	iodOpDiscard     = 3
	iodOpWriteSame   = 4
	iodOpWriteZeroes = 5
)

// I/O flags (ublksrv_io_desc.op_flags bits 8-31).
const (
	iodFUA     = 1 << 13 // UBLK_IO_F_FUA
	iodNoUnmap = 1 << 15 // UBLK_IO_F_NOUNMAP
)

// Parameter types and attributes (struct ublk_params).
const (
	paramTypeBasic   = 1 << 0
	paramTypeDiscard = 1 << 1
	paramTypeDevt    = 1 << 2

	attrReadOnly      = 1 << 0
	attrRotational    = 1 << 1
	attrVolatileCache = 1 << 2
	attrFUA           = 1 << 3
)

// UBLK_MAX_QUEUE_DEPTH and the descriptor area of one queue in the char
// device's mmap space (UBLKSRV_CMD_BUF_OFFSET + q * max area).
const (
	maxQueueDepth = 4096
	maxQueues     = 4096
)

// ctrlCmd is struct ublksrv_ctrl_cmd (32 bytes): dev_id u32 @0, queue_id
// u16 @4, len u16 @6, addr u64 @8, data[1] u64 @16, dev_path_len u16 @24,
// pad u16 @26, reserved u32 @28.
type ctrlCmd struct {
	devID   uint32
	queueID uint16
	len     uint16
	addr    uint64
	data    uint64
}

func (c *ctrlCmd) encode(b []byte) {
	_ = b[ctrlCmdSize-1]
	clear(b[:ctrlCmdSize])
	ne.PutUint32(b[0:], c.devID)
	ne.PutUint16(b[4:], c.queueID)
	ne.PutUint16(b[6:], c.len)
	ne.PutUint64(b[8:], c.addr)
	ne.PutUint64(b[16:], c.data)
}

// DevInfo is struct ublksrv_ctrl_dev_info: what ADD_DEV asks for and the
// kernel answers (it may lower NrHWQueues to the CPU count, rounds
// MaxIOBufBytes down to a page, masks Flags to what it supports).
type DevInfo struct {
	NrHWQueues    uint16 // @0
	QueueDepth    uint16 // @2
	State         uint16 // @4
	MaxIOBufBytes uint32 // @8
	DevID         uint32 // @12
	ServerPID     int32  // @16 ublksrv_pid
	Flags         uint64 // @24
	ServerFlags   uint64 // @32 ublksrv_flags (the server's own; ignored by the kernel)
	OwnerUID      uint32 // @40
	OwnerGID      uint32 // @44
}

func (d *DevInfo) encode(b []byte) {
	_ = b[devInfoSize-1]
	clear(b[:devInfoSize])
	ne.PutUint16(b[0:], d.NrHWQueues)
	ne.PutUint16(b[2:], d.QueueDepth)
	ne.PutUint16(b[4:], d.State)
	ne.PutUint32(b[8:], d.MaxIOBufBytes)
	ne.PutUint32(b[12:], d.DevID)
	ne.PutUint32(b[16:], uint32(d.ServerPID))
	ne.PutUint64(b[24:], d.Flags)
	ne.PutUint64(b[32:], d.ServerFlags)
	ne.PutUint32(b[40:], d.OwnerUID)
	ne.PutUint32(b[44:], d.OwnerGID)
}

// decodeDevInfo reads a dev_info the kernel wrote. It checks only the
// length; callers validate the values they use (checkDevInfo).
func decodeDevInfo(b []byte) (DevInfo, error) {
	if len(b) < devInfoSize {
		return DevInfo{}, fmt.Errorf("ublk: dev_info of %d bytes, want %d", len(b), devInfoSize)
	}
	return DevInfo{
		NrHWQueues:    ne.Uint16(b[0:]),
		QueueDepth:    ne.Uint16(b[2:]),
		State:         ne.Uint16(b[4:]),
		MaxIOBufBytes: ne.Uint32(b[8:]),
		DevID:         ne.Uint32(b[12:]),
		ServerPID:     int32(ne.Uint32(b[16:])),
		Flags:         ne.Uint64(b[24:]),
		ServerFlags:   ne.Uint64(b[32:]),
		OwnerUID:      ne.Uint32(b[40:]),
		OwnerGID:      ne.Uint32(b[44:]),
	}, nil
}

// checkDevInfo validates the kernel's answer before it sizes anything:
// queue count and depth within the ABI's limits, a buffer size of whole
// pages that holds at least one page.
func checkDevInfo(d *DevInfo, pageSize int) error {
	switch {
	case d.NrHWQueues == 0 || d.NrHWQueues > maxQueues:
		return fmt.Errorf("ublk: device %d reports %d queues", d.DevID, d.NrHWQueues)
	case d.QueueDepth == 0 || d.QueueDepth > maxQueueDepth:
		return fmt.Errorf("ublk: device %d reports queue depth %d", d.DevID, d.QueueDepth)
	case d.MaxIOBufBytes < uint32(pageSize) || d.MaxIOBufBytes%uint32(pageSize) != 0:
		return fmt.Errorf("ublk: device %d reports max_io_buf_bytes %d", d.DevID, d.MaxIOBufBytes)
	}
	return nil
}

// Params is struct ublk_params (basic and discard parts; devt is
// read-only, zoned unused).
type Params struct {
	Types uint32

	// basic (@8, 32 bytes)
	Attrs            uint32 // @8
	LogicalBSShift   uint8  // @12
	PhysicalBSShift  uint8  // @13
	IOOptShift       uint8  // @14
	IOMinShift       uint8  // @15
	MaxSectors       uint32 // @16
	ChunkSectors     uint32 // @20
	DevSectors       uint64 // @24
	VirtBoundaryMask uint64 // @32

	// discard (@40, 20 bytes)
	DiscardAlignment      uint32 // @40
	DiscardGranularity    uint32 // @44
	MaxDiscardSectors     uint32 // @48
	MaxWriteZeroesSectors uint32 // @52
	MaxDiscardSegments    uint16 // @56

	// devt (@60, 16 bytes; GET_PARAMS only)
	CharMajor, CharMinor, DiskMajor, DiskMinor uint32
}

func (p *Params) encode(b []byte) {
	_ = b[paramsSize-1]
	clear(b[:paramsSize])
	ne.PutUint32(b[0:], paramsSize)
	ne.PutUint32(b[4:], p.Types)
	ne.PutUint32(b[8:], p.Attrs)
	b[12], b[13], b[14], b[15] = p.LogicalBSShift, p.PhysicalBSShift, p.IOOptShift, p.IOMinShift
	ne.PutUint32(b[16:], p.MaxSectors)
	ne.PutUint32(b[20:], p.ChunkSectors)
	ne.PutUint64(b[24:], p.DevSectors)
	ne.PutUint64(b[32:], p.VirtBoundaryMask)
	ne.PutUint32(b[40:], p.DiscardAlignment)
	ne.PutUint32(b[44:], p.DiscardGranularity)
	ne.PutUint32(b[48:], p.MaxDiscardSectors)
	ne.PutUint32(b[52:], p.MaxWriteZeroesSectors)
	ne.PutUint16(b[56:], p.MaxDiscardSegments)
	ne.PutUint32(b[60:], p.CharMajor)
	ne.PutUint32(b[64:], p.CharMinor)
	ne.PutUint32(b[68:], p.DiskMajor)
	ne.PutUint32(b[72:], p.DiskMinor)
}

// decodeParams reads params the kernel wrote (GET_PARAMS). The header's
// len says how much it filled; fields past it read as zero.
func decodeParams(b []byte) (Params, error) {
	if len(b) < 8 {
		return Params{}, fmt.Errorf("ublk: params of %d bytes", len(b))
	}
	n := ne.Uint32(b[0:])
	if n < 8 || uint64(n) > uint64(len(b)) {
		return Params{}, fmt.Errorf("ublk: params len %d in a %d-byte buffer", n, len(b))
	}
	var full [paramsSize]byte
	copy(full[:], b[:min(int(n), paramsSize)])
	b = full[:]
	return Params{
		Types:                 ne.Uint32(b[4:]),
		Attrs:                 ne.Uint32(b[8:]),
		LogicalBSShift:        b[12],
		PhysicalBSShift:       b[13],
		IOOptShift:            b[14],
		IOMinShift:            b[15],
		MaxSectors:            ne.Uint32(b[16:]),
		ChunkSectors:          ne.Uint32(b[20:]),
		DevSectors:            ne.Uint64(b[24:]),
		VirtBoundaryMask:      ne.Uint64(b[32:]),
		DiscardAlignment:      ne.Uint32(b[40:]),
		DiscardGranularity:    ne.Uint32(b[44:]),
		MaxDiscardSectors:     ne.Uint32(b[48:]),
		MaxWriteZeroesSectors: ne.Uint32(b[52:]),
		MaxDiscardSegments:    ne.Uint16(b[56:]),
		CharMajor:             ne.Uint32(b[60:]),
		CharMinor:             ne.Uint32(b[64:]),
		DiskMajor:             ne.Uint32(b[68:]),
		DiskMinor:             ne.Uint32(b[72:]),
	}, nil
}

// ioCmd is struct ublksrv_io_cmd (16 bytes): q_id u16 @0, tag u16 @2,
// result s32 @4, addr u64 @8.
func encodeIOCmd(b []byte, q, tag uint16, result int32, addr uint64) {
	_ = b[ioCmdSize-1]
	ne.PutUint16(b[0:], q)
	ne.PutUint16(b[2:], tag)
	ne.PutUint32(b[4:], uint32(result))
	ne.PutUint64(b[8:], addr)
}

// ioDesc is struct ublksrv_io_desc (24 bytes), written by the kernel into
// the queue's mmap'd descriptor array at index tag: op_flags u32 @0,
// nr_sectors u32 @4, start_sector u64 @8, addr u64 @16.
type ioDesc struct {
	opFlags     uint32
	nrSectors   uint32
	startSector uint64
	addr        uint64
}

func decodeIODesc(b []byte) ioDesc {
	_ = b[ioDescSize-1]
	return ioDesc{
		opFlags:     ne.Uint32(b[0:]),
		nrSectors:   ne.Uint32(b[4:]),
		startSector: ne.Uint64(b[8:]),
		addr:        ne.Uint64(b[16:]),
	}
}
