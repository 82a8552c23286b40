package file

import (
	"errors"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
)

// ioKind is what xfer does.
type ioKind uint8

const (
	kindRead      ioKind = iota
	kindWrite            // pwrite / pwritev
	kindWriteSync        // pwritev2 with RWF_DSYNC
)

// prepare checks the closed state, the length and the range of an I/O
// vector at lba, and returns its byte offset and length. The caller holds
// b.mu for reading.
func (b *Backend) prepare(bufs [][]byte, lba uint64) (off int64, total uint64, err error) {
	if b.closed {
		return 0, 0, blockdev.ErrClosed
	}
	for _, p := range bufs {
		total += uint64(len(p))
	}
	if total&uint64(b.bs-1) != 0 {
		return 0, 0, blockdev.ErrUnaligned
	}
	if !blockdev.RangeOK(lba, total>>b.shift, b.blocks.Load()) {
		return 0, 0, blockdev.ErrOutOfRange
	}
	// Open guarantees blocks<<shift fits an int64.
	return int64(lba << b.shift), total, nil
}

// ReadAt fills bufs from the device starting at block lba. It may block.
func (b *Backend) ReadAt(bufs [][]byte, lba uint64) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	off, total, err := b.prepare(bufs, lba)
	if err != nil || total == 0 {
		return err
	}
	raceWriteBufs(bufs)
	return b.xfer(bufs, off, kindRead)
}

// WriteAt writes bufs to the device starting at block lba. With
// blockdev.WriteFUA the data is durable when it returns. It may block.
func (b *Backend) WriteAt(bufs [][]byte, lba uint64, flags blockdev.WriteFlags) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	off, total, err := b.prepare(bufs, lba)
	if err != nil {
		return err
	}
	if b.readOnly {
		return blockdev.ErrReadOnly
	}
	if total == 0 {
		return nil
	}
	raceReadBufs(bufs)
	return b.writeLocked(bufs, off, flags)
}

// writeLocked writes the checked vector bufs at byte offset off, honouring
// WriteFUA. The caller holds b.mu for reading.
func (b *Backend) writeLocked(bufs [][]byte, off int64, flags blockdev.WriteFlags) (err error) {
	if flags&blockdev.WriteFUA == 0 {
		return b.xfer(bufs, off, kindWrite)
	}
	if !b.noDSync.Load() {
		err = b.xfer(bufs, off, kindWriteSync)
		if err != errNoDSync {
			if err == nil {
				b.stats.fuaNative.Add(1)
			}
			return err
		}
		// The kernel has no RWF_DSYNC; xfer wrote the rest plainly.
	} else if err = b.xfer(bufs, off, kindWrite); err != nil {
		return err
	}
	b.stats.fuaEmulated.Add(1)
	if e := fdatasync(b.fd); e != 0 {
		return b.osErr("fdatasync", off, e)
	}
	return nil
}

// errNoDSync is xfer's private signal that it finished a kindWriteSync
// transfer without RWF_DSYNC, so the caller must fdatasync. Never
// returned to users.
var errNoDSync = errors.New("file: internal: RWF_DSYNC unavailable")

// directOK reports whether an I/O at byte offset off on bufs may use the
// O_DIRECT descriptor: offset, and every buffer's address and length,
// multiples of b.align. Empty buffers are skipped (they are not passed to
// the kernel).
func (b *Backend) directOK(bufs [][]byte, off int64) bool {
	if b.dfd < 0 {
		return false
	}
	m := b.align - 1
	if uintptr(off)&m != 0 {
		return false
	}
	for _, p := range bufs {
		if len(p) == 0 {
			continue
		}
		if (uintptr(unsafe.Pointer(unsafe.SliceData(p)))|uintptr(len(p)))&m != 0 {
			return false
		}
	}
	return true
}

// xfer moves the bytes of bufs to or from byte offset off, retrying short
// transfers and EINTR. It picks the direct descriptor when directOK and
// falls back to the buffered one when the kernel refuses O_DIRECT or a
// short transfer leaves a misaligned remainder. The caller holds b.mu for
// reading. It allocates nothing unless it fails.
func (b *Backend) xfer(bufs [][]byte, off int64, kind ioKind) error {
	fd, direct := b.dfd, b.directOK(bufs, off)
	if direct {
		b.stats.direct.Add(1)
	} else {
		var err error
		if fd, err = b.bufferedFD(); err != nil {
			return err
		}
		b.stats.buffered.Add(1)
	}
	lost := false // RWF_DSYNC was refused part way: tell the caller to sync
	var iov [iovBatch]syscall.Iovec
	i, pos := 0, 0 // cursor: the next byte is bufs[i][pos]
	done := 0      // bytes moved so far
	for {
		for i < len(bufs) && pos == len(bufs[i]) {
			i, pos = i+1, 0
		}
		if i == len(bufs) {
			if lost {
				return errNoDSync
			}
			return nil
		}
		var n int
		var e syscall.Errno
		if i == len(bufs)-1 && kind != kindWriteSync {
			// One buffer left: plain pread/pwrite.
			if kind == kindRead {
				n, e = pread(fd, bufs[i][pos:], off)
			} else {
				n, e = pwrite(fd, bufs[i][pos:], off)
			}
		} else {
			cnt := 0
			for j, q := i, pos; j < len(bufs) && cnt < iovBatch; j, q = j+1, 0 {
				if p := bufs[j][q:]; len(p) > 0 {
					iov[cnt].Base = unsafe.SliceData(p)
					iov[cnt].SetLen(len(p))
					cnt++
				}
			}
			switch kind {
			case kindRead:
				n, e = preadv(fd, &iov[0], cnt, off)
			case kindWrite:
				n, e = pwritev(fd, &iov[0], cnt, off)
			default:
				n, e = pwritev2(fd, &iov[0], cnt, off, rwfDSync)
			}
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EINVAL && fd == b.dfd:
			// The kernel wants a stricter alignment than we assumed.
			var err error
			if fd, err = b.bufferedFD(); err != nil {
				return err
			}
			b.stats.directRefused.Add(1)
			continue
		case (e == syscall.ENOSYS || e == syscall.EOPNOTSUPP) && kind == kindWriteSync:
			b.noDSync.Store(true)
			kind, lost = kindWrite, true
			continue
		case e != 0:
			return b.osErr(kind.String(), off, e)
		case n <= 0:
			return b.shortErr(kind != kindRead, off)
		}
		off += int64(n)
		done += n
		for n > 0 {
			if rem := len(bufs[i]) - pos; n < rem {
				pos += n
				n = 0
			} else {
				n -= rem
				i, pos = i+1, 0
			}
		}
		if fd == b.dfd && uintptr(done)&(b.align-1) != 0 {
			var err error
			if fd, err = b.bufferedFD(); err != nil {
				return err
			}
			b.stats.directRefused.Add(1)
		}
	}
}

// String names the system call family for error messages.
func (k ioKind) String() string {
	switch k {
	case kindRead:
		return "read"
	case kindWrite:
		return "write"
	}
	return "write (RWF_DSYNC)"
}
