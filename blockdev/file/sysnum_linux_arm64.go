package file

// Linux arm64 syscall numbers (include/uapi/asm-generic/unistd.h) and
// block-layer ioctls (include/uapi/linux/fs.h) the syscall package does
// not define.
const (
	sysPwritev2 = 287
	sysStatx    = 291

	ioctlBLKSECTGET   = 0x1267     // _IO(0x12, 103): max sectors per request (unsigned short)
	ioctlBLKSSZGET    = 0x1268     // _IO(0x12, 104)
	ioctlBLKDISCARD   = 0x1277     // _IO(0x12, 119)
	ioctlBLKZEROOUT   = 0x127f     // _IO(0x12, 127)
	ioctlBLKGETSIZE64 = 0x80081272 // _IOR(0x12, 114, size_t)
)
