//go:build linux && !amd64 && !arm64

package file

// On other architectures the numbers differ (and ioctl encodings differ
// on powerpc, mips and sparc). Zero means "not available": FUA is written
// then fdatasync'ed, the direct-I/O alignment defaults to 4096 (or the
// device's logical block size), block devices are sized with lseek, their
// logical block size is taken as 512, zeroes are written, and discard is
// ignored.
const (
	sysPwritev2 = 0
	sysStatx    = 0

	ioctlBLKSECTGET   = 0
	ioctlBLKSSZGET    = 0
	ioctlBLKDISCARD   = 0
	ioctlBLKZEROOUT   = 0
	ioctlBLKGETSIZE64 = 0
)
