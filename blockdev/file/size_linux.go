package file

import (
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"path/filepath"
	"syscall"
)

// oTmpfile is O_TMPFILE (include/uapi/asm-generic/fcntl.h: __O_TMPFILE |
// O_DIRECTORY), which the syscall package does not define.
const oTmpfile = 0o20000000 | syscall.O_DIRECTORY

// ftruncate is syscall.Ftruncate; tests replace it to simulate a
// filesystem whose maximum file size is below its capacity (EFBIG).
var ftruncate = syscall.Ftruncate

// CheckSize reports whether a volume of size bytes can live at path, for
// configuration code (the cluster's create, the daemon's start-up) to
// refuse an impossible size before anything is created. It does not
// create path and leaves the filesystem as it was.
//
//   - A block device at path: size must not exceed the device
//     (ErrTooSmall otherwise).
//   - A regular file at path that already holds size bytes: fine.
//   - Otherwise (missing or smaller file): size must fit the total
//     capacity of the filesystem that holds path's directory (statfs; a
//     sparse file may be larger than the free space, never than the
//     filesystem) and its maximum file size, found by growing an unnamed
//     temporary file (O_TMPFILE) to size; EFBIG or EINVAL there means
//     too large. Filesystems without O_TMPFILE skip that probe; Open
//     still refuses such a size when it grows the file.
//
// Errors wrap ErrTooLarge, ErrTooSmall, ErrInvalidOptions or the OS
// error (fs.PathError) and name path and both sizes. It blocks on the
// filesystem.
func CheckSize(path string, size int64) error {
	if size <= 0 {
		return fmt.Errorf("%w: size %d, want > 0", ErrInvalidOptions, size)
	}
	var st syscall.Stat_t
	err := syscall.Stat(path, &st)
	switch {
	case err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFBLK:
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return &fs.PathError{Op: "open", Path: path, Err: err}
		}
		defer syscall.Close(fd)
		devSize, _, err := blockDeviceGeometry(fd)
		if err != nil {
			return &fs.PathError{Op: "block device geometry", Path: path, Err: err}
		}
		if size > devSize {
			return fmt.Errorf("%w: device %s has %d bytes, want %d", ErrTooSmall, path, devSize, size)
		}
		return nil
	case err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG:
		if st.Size >= size {
			return nil
		}
	case err == nil:
		return fmt.Errorf("%w: %s", ErrUnsupportedFile, path)
	case !errors.Is(err, syscall.ENOENT):
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	dir := filepath.Dir(path)
	var sfs syscall.Statfs_t
	if err := syscall.Statfs(dir, &sfs); err != nil {
		return &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	if err := fitsFilesystem(path, &sfs, size); err != nil {
		return err
	}
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil // no O_TMPFILE here (EOPNOTSUPP, EISDIR, EINVAL): Open checks when it grows the file
	}
	defer syscall.Close(fd)
	return truncateErr(path, size, ftruncate(fd, size))
}

// fitsFilesystem refuses a size above the total capacity statfs reports.
func fitsFilesystem(path string, sfs *syscall.Statfs_t, size int64) error {
	unit := uint64(sfs.Frsize)
	if unit == 0 {
		unit = uint64(sfs.Bsize)
	}
	hi, total := bits.Mul64(sfs.Blocks, unit)
	if hi != 0 || unit == 0 || sfs.Blocks == 0 {
		return nil // too big to matter, or a filesystem that reports no capacity (some FUSE)
	}
	if uint64(size) > total {
		return fmt.Errorf("%w: %s: %d bytes requested, the filesystem holds %d bytes in all", ErrTooLarge, path, size, total)
	}
	return nil
}

// truncateErr turns the result of growing path to size with ftruncate
// into Open's and CheckSize's error: EFBIG (beyond the filesystem's
// maximum file size) and EINVAL (beyond what the kernel takes) become
// ErrTooLarge.
func truncateErr(path string, size int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EFBIG), errors.Is(err, syscall.EINVAL):
		return fmt.Errorf("%w: %s: %d bytes is beyond the filesystem's maximum file size: %w", ErrTooLarge, path, size, err)
	}
	return &fs.PathError{Op: "ftruncate", Path: path, Err: err}
}

// growFile grows the open regular file fd (at path) to size bytes after
// checking that its filesystem can hold them.
func growFile(fd int, path string, size int64) error {
	if err := growCheck(fd, path, size); err != nil {
		return err
	}
	return truncateErr(path, size, ftruncate(fd, size))
}

// growCheck refuses a size beyond the total capacity of fd's filesystem.
func growCheck(fd int, path string, size int64) error {
	var sfs syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &sfs); err != nil {
		return &fs.PathError{Op: "fstatfs", Path: path, Err: err}
	}
	return fitsFilesystem(path, &sfs, size)
}
