package file

import (
	"fmt"
	"io/fs"
	"math"

	"github.com/rdmablk/rdmablk/blockdev"
)

var _ blockdev.Resizer = (*Backend)(nil)

// Resize implements blockdev.Resizer: the backend now serves blocks
// blocks, in place: the descriptors, the shared ring and the fixed-buffer
// registrations stay as they are, so the fast path and every other
// capability carry on.
//
// A regular file is cut to the old served size and then grown (sparse) to
// the new one, so blocks past the old end read zeroes even when the file
// held bytes beyond what was served; shrinking cuts the file. The new size
// is checked against the filesystem as Open does (ErrTooLarge) and made
// durable (fdatasync) before Resize returns. A block device can be
// resized up to its size (ErrTooSmall beyond it); its blocks past the old
// end keep whatever the device holds.
//
// Resize waits for calls in progress (fast-path I/O included) and holds
// every other call back while it runs; it may block on the filesystem. It
// fails with blockdev.ErrClosed after Close, blockdev.ErrReadOnly on a
// read-only backend, and ErrInvalidOptions for 0 blocks. On error the
// capacity is unchanged.
func (b *Backend) Resize(blocks uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	if b.readOnly {
		return blockdev.ErrReadOnly
	}
	if blocks == 0 {
		return fmt.Errorf("%w: resize %s to 0 blocks", ErrInvalidOptions, b.path)
	}
	if blocks > uint64(math.MaxInt64)>>b.shift {
		return fmt.Errorf("%w: %s: %d blocks of %d bytes", ErrTooLarge, b.path, blocks, b.bs)
	}
	old := b.blocks.Load()
	size, oldSize := int64(blocks<<b.shift), int64(old<<b.shift)
	if b.blockDev {
		devSize, _, err := blockDeviceGeometry(b.fd)
		if err != nil {
			return &fs.PathError{Op: "block device geometry", Path: b.path, Err: err}
		}
		if size > devSize {
			return fmt.Errorf("%w: device %s has %d bytes, want %d", ErrTooSmall, b.path, devSize, size)
		}
		b.blocks.Store(blocks)
		return nil
	}
	if size > oldSize {
		if err := growCheck(b.fd, b.path, size); err != nil {
			return err
		}
		// Drop whatever the file holds past the served size, then grow.
		if err := truncateErr(b.path, oldSize, ftruncate(b.fd, oldSize)); err != nil {
			return err
		}
	}
	if err := truncateErr(b.path, size, ftruncate(b.fd, size)); err != nil {
		return err
	}
	if e := fdatasync(b.fd); e != 0 {
		return b.osErr("fdatasync", -1, e)
	}
	b.blocks.Store(blocks)
	return nil
}
