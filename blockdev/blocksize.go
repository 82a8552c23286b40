package blockdev

// Block size limits. NVMe expresses the LBA data size as a power of two
// (LBADS, Identify Namespace LBA Format); values below 9 are not supported
// (NVMe Base 2.0, Figure 280). 64 KiB is the largest size our backends accept.
const (
	MinBlockSize = 512
	MaxBlockSize = 64 << 10
)

// ValidBlockSize reports whether n is a power of two between MinBlockSize
// and MaxBlockSize inclusive. Configuration code calls it before building
// a backend; constructors that cannot return an error (mem.New, null.New)
// panic on a size it rejects.
func ValidBlockSize(n int) bool {
	return n >= MinBlockSize && n <= MaxBlockSize && n&(n-1) == 0
}

// RangeOK reports whether blocks [lba, lba+n) lie within a device of the
// given capacity, without overflowing when lba+n would wrap. An empty
// range (n == 0) is within the device when lba <= blocks.
func RangeOK(lba, n, blocks uint64) bool {
	return n <= blocks && lba <= blocks-n
}
