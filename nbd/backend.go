package nbd

// Backend is what an export serves. It must be safe for concurrent use.
// Offsets and lengths the server passes are within [0, Size()) and, when
// BlockSize() > 1, multiples of it (the server does read-modify-write for
// unaligned client requests).
type Backend interface {
	// Size is the export size in bytes.
	Size() int64
	// BlockSize is the smallest addressable unit in bytes (1 or less:
	// byte granular).
	BlockSize() int
	// ReadAt fills p from off. It must not retain p.
	ReadAt(p []byte, off int64) (int, error)
	// WriteAt writes p at off. It must not retain p.
	WriteAt(p []byte, off int64) (int, error)
}

// Flusher is implemented by backends with a volatile cache: Flush makes
// every completed write durable (NBD_CMD_FLUSH → NVMe Flush).
type Flusher interface {
	Flush() error
}

// FUAWriter writes with Force Unit Access (NBD_CMD_FLAG_FUA → NVMe Write
// with FUA).
type FUAWriter interface {
	WriteFUA(p []byte, off int64) error
}

// Trimmer deallocates a range (NBD_CMD_TRIM → NVMe Dataset Management).
type Trimmer interface {
	Deallocate(off, length int64) error
}

// Zeroer zeroes a range without sending data (NBD_CMD_WRITE_ZEROES →
// NVMe Write Zeroes).
type Zeroer interface {
	WriteZeroes(off, length int64) error
}
