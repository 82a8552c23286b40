// Package file is a Backend over a regular file or a Linux block device.
//
// # Opening
//
// Open takes a path and Options. A regular file is created sparse (mode
// 0600) or grown sparse to Options.Size; it is never shrunk. A block
// device is sized with BLKGETSIZE64 and its logical block size read with
// BLKSSZGET. The backend's capacity is Options.Size when given, else the
// file's or device's size, rounded down to whole blocks.
//
// Resize (blockdev.Resizer) changes the capacity in place: a regular file
// is cut to the served size and grown sparse (new blocks read zeroes) or
// cut, checked against the filesystem like Open and made durable; a block
// device serves up to its size. Descriptors, ring and fixed-buffer
// registrations stay, so the fast path survives. Resize takes the
// backend's lock for writing: it waits for calls in progress (in-flight
// async I/O included) and holds new ones back until it is done.
//
// Sizes the filesystem can never hold are refused: Open, before it grows
// a file, compares the size with the filesystem's total capacity
// (fstatfs) and maps EFBIG/EINVAL from ftruncate (beyond the maximum file
// size) to ErrTooLarge, removing a file it created itself. CheckSize makes
// the same checks without creating anything, for configuration code.
//
// # Two descriptors: direct and buffered
//
// Unless Options.Direct is DirectOff, the file is opened with O_DIRECT,
// and that descriptor also serves fdatasync, fallocate, ftruncate and the
// block device ioctls. A second descriptor through the page cache is
// opened only when the first misaligned I/O needs it, by reopening the
// O_DIRECT one's file (/proc/self/fd, so a rename or unlink of the path
// since Open does not matter): a volume that only sees aligned I/O holds
// one descriptor. Each ReadAt/WriteAt goes to the direct descriptor when
// the byte offset and every buffer's address and length are multiples of
// DirectAlign(); otherwise it goes buffered.
// Alignment is checked here, not left to the kernel: some kernels and
// filesystems accept misaligned memory with O_DIRECT (this project's build
// host does), which would hide alignment bugs. If the kernel still refuses
// a direct I/O (EINVAL), it is redone buffered. Linux keeps the two paths
// coherent: a direct write writes back and invalidates cached pages of its
// range, a direct read writes back dirty cached pages first. Stats counts
// how many I/Os took each path.
//
// DirectAuto (the default) quietly runs buffered-only when the filesystem
// refuses O_DIRECT (EINVAL on open, or statx reporting no direct I/O);
// DirectOn makes that an error (ErrDirectUnsupported).
//
// # Ownership and buffer lifetimes
//
// The caller owns every buffer. ReadAt and WriteAt pass them to the kernel
// by address (pread/pwrite, preadv/pwritev/pwritev2) and keep no reference
// after returning. Vectored I/O builds its iovec array on the stack, in
// batches of up to 64 entries, so I/O allocates nothing on the success
// path (see the benchmarks). Buffers should come from AlignedBuffer or
// registered memory with 4096-byte alignment to take the direct path.
//
// # Durability
//
//   - Flush is fdatasync.
//   - WriteAt with blockdev.WriteFUA uses pwritev2(RWF_DSYNC); where the
//     kernel lacks it (ENOSYS/EOPNOTSUPP) the write is followed by
//     fdatasync of the whole file.
//   - Close is fdatasync then close.
//
// # Zeroes and discard
//
// Regular files: WriteZeroes is fallocate(ZERO_RANGE|KEEP_SIZE), else
// fallocate(PUNCH_HOLE|KEEP_SIZE), else zero blocks written in chunks of at
// most 1 MiB. Discard is fallocate(PUNCH_HOLE|KEEP_SIZE), else the
// WriteZeroes path, so discarded blocks of a file always read back zero.
// Which calls the filesystem refused is remembered, so a refused call is
// not retried on every request.
//
// Block devices: WriteZeroes is BLKZEROOUT (else zero blocks written);
// Discard is BLKDISCARD and is only a hint: afterwards the blocks' content
// is whatever the device returns, and a device without discard support
// ignores it.
//
// # The io_uring fast path: shared rings
//
// Backends with an O_DIRECT descriptor implement blockdev.Async,
// blockdev.AsyncBatcher, blockdev.Poller and blockdev.FixedBuffers on
// io_uring (Poll: a spinning submitter reaps the ring's completions itself,
// as Unplug does after its submission; the ring's eventfd is also in
// internal/nbsys's parked set, so a spinner that cannot take them parks
// and lets the reaper run). The rings
// are not the backend's own: a RingGroup holds a fixed set of rings
// (default: DefaultRingGroup, GOMAXPROCS rings of DefaultGroupRingEntries
// entries, created at the first Open and kept for the life of the
// process), and Open attaches each backend to one of them, round robin.
// An SQE names the backend's own O_DIRECT descriptor (plain fds, no
// registered-file table), and its user data a slot of the ring's slot
// table that records the submitting backend and Completion, so the ring's
// reaper routes each completion back to it.
//
// Threads and descriptors therefore follow the number of rings, not of
// volumes: each ring has one descriptor, one eventfd and one reaper
// goroutine, which waits for the eventfd in Go's network poller (where the
// eventfd cannot be registered it blocks in io_uring_enter and so pins one
// OS thread); each backend holds
// its file's O_DIRECT descriptor (and a buffered one after a misaligned
// I/O). Measured: 5,000 file volumes on one process took 7 OS threads and
// one descriptor per volume (TestManyVolumes); before shared rings, a
// thread and three descriptors per volume.
//
// Per backend, Options.RingEntries bounds the entries in flight (an I/O
// is one, or one per piece, below); a full ring
// or a backend at its bound makes Submit* return false (the caller uses
// the blocking path). Plug and Unplug count per backend: a plugged
// backend's I/O waits in the ring's SQ until its Unplug, or until another
// backend on the same ring submits (which hands the kernel everything
// queued; a plug only promises batching, not delay). The Unplug that
// submits also finishes, on its caller's goroutine, the completions
// already posted when io_uring_enter returns (a RAM-backed device
// completes during the call): for the target this is the poll group,
// which answers them in its next pass, with no wake-up of the reaper or
// hand-off between goroutines. The reaper is not woken for them either:
// the Unplug pauses the eventfd's signals around its submission and reap
// (IORING_CQ_EVENTFD_DISABLED, Linux 5.8+), then looks at the CQ once more
// after resuming, or sends the reaper round when the reaper holds the CQ
// meanwhile; before 5.8 it reads the eventfd's count back instead (one
// system call more per Unplug), reaping once more for a completion whose
// signal that read took. A completion that is
// not a full transfer (error, short, EAGAIN) is redone through the
// blocking path on a goroutine of its own, so that one volume's error
// path does not hold up the others' completions on the shared reaper.
//
// Pieces: io_uring first issues a block-device read or write without
// blocking, and the block layer will not split a non-blocking request
// (bio_split_rw ends it with EAGAIN); an I/O larger than the device
// queue's max_sectors_kb (a memory-backed null_blk's default is 127 KiB,
// an NVMe SSD's often 128 KiB) so failed that attempt on every call and
// went to an io_uring worker thread: a second submission and a thread
// hop per large I/O. A backend on a block device therefore issues such an
// I/O as pieces of at most the device's limit (BLKSECTGET at Open,
// Options.MaxPiece to override), one SQE each, all in flight at once; the
// first piece's slot is the I/O's head and counts the pieces still out,
// and the I/O completes once, when the last is reaped. A piece that falls
// short makes the reaper redo the whole I/O through the blocking path
// (reads and writes of the same bytes are idempotent; a FUA write's
// redo is FUA too). Stats.PiecedIOs counts the I/Os submitted as pieces;
// RingEntries counts entries, so an I/O of more pieces than that takes
// the blocking path. Pieces are at most 1 MiB (BIO_MAX_VECS pages: one
// direct-I/O bio) and count from the I/O's start, so a device that also
// splits at chunk boundaries (chunk_sectors: RAID0, some SSDs) may still
// split a piece and punt it; the limit is read once, at Open.
//
// Fixed buffers: each ring has one sparse fixed-buffer table
// (GroupOptions.FixedEntries, default FixedTableEntries) shared by its
// backends. RegisterFixed installs a region in the table of the backend's
// ring; a region with the same base and size already registered on that
// ring (one transport queue's memory serving several namespaces) shares
// its entries and its pinning, reference counted. A backend's handles
// are its own: UnregisterFixed ignores handles it does not hold, and
// Close drops all it still holds. The table bounds the distinct regions
// per ring, not per volume: with many volumes, memory registered per
// queue rather than per volume keeps the table small; when it is full,
// RegisterFixed fails with ErrFixedUnavailable and I/O goes plain.
//
// Buffer lifetimes on the fast path: a buffer passed to Submit* belongs
// to the kernel until the I/O's IODone is called; a region passed to
// RegisterFixed must stay mapped until UnregisterFixed (or Close) has
// returned and every I/O submitted on it completed (the kernel keeps the
// pages pinned until then).
//
// # Concurrency
//
// All methods are safe for concurrent use and may block in the kernel; the
// target must call them off its queue pollers. Every call holds a read lock
// for its duration; Close takes the write lock, so it waits for calls in
// progress, and every call that starts after it returns blockdev.ErrClosed.
//
// # Errors
//
// Range, length and closed checks return the blockdev sentinels. OS errors
// are wrapped together with the errno (errors.Is works for both): EIO,
// EBADMSG and EUCLEAN become blockdev.ErrMedium, EROFS becomes
// blockdev.ErrReadOnly, ENOSPC and EDQUOT (from writes on either path,
// fallocate, written zeroes, fdatasync) become blockdev.ErrNoSpace, and a
// read that hits end of file early (the file
// was truncated behind our back) is blockdev.ErrMedium with
// io.ErrUnexpectedEOF.
//
// The package is Linux-only; elsewhere Open returns ErrUnsupportedFile.
package file
