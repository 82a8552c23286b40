package file

import "unsafe"

// AlignedBuffer returns a zeroed slice of size bytes whose first byte is
// aligned to align bytes (align <= 0 means 4096), suitable for the direct
// I/O path. It over-allocates from the Go heap (which does not move
// objects) and slices; the capacity is limited to size so appends cannot
// run into the slack. It returns nil when size < 0. Callers that need
// memory outside the Go heap (RDMA registration) allocate it themselves.
func AlignedBuffer(size, align int) []byte {
	if size < 0 {
		return nil
	}
	if align <= 0 {
		align = 4096
	}
	raw := make([]byte, size+align-1)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
	off := int((uintptr(align) - addr%uintptr(align)) % uintptr(align))
	return raw[off : off+size : off+size]
}
