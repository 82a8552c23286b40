package regmem

import "unsafe"

func uintptrOf(b []byte, off int) uintptr { return uintptr(unsafe.Pointer(&b[off])) }
