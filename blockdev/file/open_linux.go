package file

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
)

// openFile is syscall.Open; tests replace it to simulate filesystems that
// refuse O_DIRECT.
var openFile = syscall.Open

// defaultDirectAlign is assumed when the kernel does not report the
// direct-I/O alignment of a regular file: 4096 satisfies every common
// filesystem and device.
const defaultDirectAlign = 4096

// Open opens the regular file or block device at path. See Options for
// sizing and the package documentation for the I/O paths. It blocks on
// the filesystem (open, fstat, ftruncate, ioctl).
func Open(path string, opts Options) (*Backend, error) {
	if opts.Size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrInvalidOptions, opts.Size)
	}
	if opts.BlockSize != 0 && !blockdev.ValidBlockSize(opts.BlockSize) {
		return nil, fmt.Errorf("%w: block size %d", ErrInvalidOptions, opts.BlockSize)
	}
	if opts.Direct > DirectOff {
		return nil, fmt.Errorf("%w: direct mode %v", ErrInvalidOptions, opts.Direct)
	}

	flags := syscall.O_CLOEXEC | syscall.O_RDWR
	if opts.ReadOnly {
		flags = syscall.O_CLOEXEC | syscall.O_RDONLY
	}
	// Create the file exclusively first, so that a file Open created is
	// removed again when it refuses the size.
	created := false
	fd, err := openFile(path, flags, 0)
	if errors.Is(err, syscall.ENOENT) && !opts.ReadOnly && opts.Size > 0 {
		fd, err = openFile(path, flags|syscall.O_CREAT|syscall.O_EXCL, 0o600)
		created = err == nil
		if errors.Is(err, syscall.EEXIST) { // created by someone else meanwhile
			fd, err = openFile(path, flags, 0)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	b := &Backend{path: path, fd: fd, dfd: -1, readOnly: opts.ReadOnly}
	b.buf.Store(-1)
	if err := b.setup(opts, flags); err != nil {
		if b.dfd >= 0 {
			syscall.Close(b.dfd)
		}
		syscall.Close(fd)
		if created {
			_ = syscall.Unlink(path)
		}
		return nil, err
	}
	if b.dfd >= 0 {
		// One descriptor per file while only aligned I/O comes: the
		// O_DIRECT one serves every control call too (fdatasync,
		// fallocate, ftruncate, ioctl); the buffered one is reopened from
		// it at the first misaligned I/O (bufferedFD).
		syscall.Close(fd)
		b.fd = b.dfd
	} else {
		b.buf.Store(int32(fd))
	}
	b.flags = flags
	b.startRing(opts)
	return b, nil
}

// bufferedFD returns the descriptor that goes through the page cache,
// opening it at first use: it reopens the file the O_DIRECT descriptor
// holds (/proc/self/fd), so a rename or unlink of the path since Open
// does not matter. The caller holds b.mu for reading.
func (b *Backend) bufferedFD() (int, error) {
	if fd := b.buf.Load(); fd >= 0 {
		return int(fd), nil
	}
	b.bufMu.Lock()
	defer b.bufMu.Unlock()
	if fd := b.buf.Load(); fd >= 0 {
		return int(fd), nil
	}
	fd, err := openFile(fmt.Sprintf("/proc/self/fd/%d", b.dfd), b.flags, 0)
	if err != nil {
		return -1, fmt.Errorf("file %s: reopen without O_DIRECT for a misaligned I/O: %w", b.path, err)
	}
	b.buf.Store(int32(fd))
	return fd, nil
}

// setup sizes the backend and opens the direct descriptor. On error the
// caller closes the descriptors.
func (b *Backend) setup(opts Options, flags int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(b.fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: b.path, Err: err}
	}
	var size int64 // bytes served
	bs := opts.BlockSize
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		size = st.Size
		if opts.Size > size {
			if opts.ReadOnly {
				return fmt.Errorf("%w: %s has %d bytes, want %d (read-only, cannot grow)", ErrTooSmall, b.path, size, opts.Size)
			}
			if err := growFile(b.fd, b.path, opts.Size); err != nil {
				return err
			}
		}
		if opts.Size > 0 {
			size = opts.Size
		}
		if bs == 0 {
			bs = 512
		}
	case syscall.S_IFBLK:
		b.blockDev = true
		devSize, lbs, err := blockDeviceGeometry(b.fd)
		if err != nil {
			return &fs.PathError{Op: "block device geometry", Path: b.path, Err: err}
		}
		if bs == 0 {
			bs = lbs
		}
		if bs < lbs || !blockdev.ValidBlockSize(bs) {
			return fmt.Errorf("%w: block size %d below the device's logical block size %d", ErrInvalidOptions, bs, lbs)
		}
		size = devSize
		if opts.Size > devSize {
			return fmt.Errorf("%w: device %s has %d bytes, want %d", ErrTooSmall, b.path, devSize, opts.Size)
		}
		if opts.Size > 0 {
			size = opts.Size
		}
	default:
		return fmt.Errorf("%w: %s", ErrUnsupportedFile, b.path)
	}
	b.bs = bs
	b.shift = uint(bits.TrailingZeros(uint(bs)))
	b.blocks.Store(uint64(size) >> b.shift) // size <= MaxInt64, so blocks<<shift fits an int64
	if b.blocks.Load() == 0 {
		return fmt.Errorf("%w: %s holds %d bytes, less than one %d-byte block", ErrTooSmall, b.path, size, bs)
	}
	if opts.Direct == DirectOff {
		return nil
	}
	return b.openDirect(opts.Direct, flags)
}

// openDirect opens the O_DIRECT descriptor and works out its alignment.
func (b *Backend) openDirect(mode DirectMode, flags int) error {
	unsupported := func(why string) error {
		if mode == DirectOn {
			return fmt.Errorf("%w: %s: %s", ErrDirectUnsupported, b.path, why)
		}
		return nil // DirectAuto: buffered only
	}
	dfd, err := openFile(b.path, flags|syscall.O_DIRECT, 0)
	if err == syscall.EINVAL {
		return unsupported("open with O_DIRECT: invalid argument")
	}
	if err != nil {
		return &fs.PathError{Op: "open O_DIRECT", Path: b.path, Err: err}
	}
	b.dfd = dfd
	align := uint64(defaultDirectAlign)
	if b.blockDev {
		align = uint64(b.bs) // at least the logical block size, checked in setup
	}
	if memAlign, offAlign, ok := statxDIO(dfd); ok {
		if offAlign == 0 {
			syscall.Close(dfd)
			b.dfd = -1
			return unsupported("statx reports no direct I/O support")
		}
		align = uint64(max(memAlign, offAlign))
	}
	// A power of two, so that masks work; never above what any sane
	// device needs.
	if align&(align-1) != 0 {
		align = 1 << bits.Len64(align)
	}
	if align > math.MaxUint32 {
		syscall.Close(dfd)
		b.dfd = -1
		return unsupported(fmt.Sprintf("direct-I/O alignment %d", align))
	}
	b.align = uintptr(align)
	return nil
}

// blockDeviceGeometry returns a block device's size in bytes and logical
// block size.
func blockDeviceGeometry(fd int) (size int64, lbs int, err error) {
	var sz uint64
	if e := ioctlPtr(fd, ioctlBLKGETSIZE64, unsafe.Pointer(&sz)); e == 0 {
		size = int64(min(sz, math.MaxInt64))
	} else {
		end, err := syscall.Seek(fd, 0, 2) // SEEK_END
		if err != nil {
			return 0, 0, err
		}
		size = end
	}
	var ssz int32
	switch e := ioctlPtr(fd, ioctlBLKSSZGET, unsafe.Pointer(&ssz)); {
	case e == syscall.ENOTTY:
		lbs = 512
	case e != 0:
		return 0, 0, e
	default:
		lbs = int(ssz)
	}
	if !blockdev.ValidBlockSize(lbs) {
		return 0, 0, fmt.Errorf("logical block size %d not supported", lbs)
	}
	return size, lbs, nil
}
