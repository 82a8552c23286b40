//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"unsafe"
)

// sockaddr parses "host:port" (host may be empty, an IP or a name) into a
// sockaddr_storage for librdmacm.
func sockaddr(addr string, ss *C.struct_sockaddr_storage) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// A bare IP (ResolveOptions.LocalAddr may omit the port).
		host, port = addr, "0"
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("%w %q: port: %v", errBadAddr, addr, err)
	}
	var ip netip.Addr
	switch {
	case host == "":
		ip = netip.IPv4Unspecified()
	default:
		ip, err = netip.ParseAddr(host)
		if err != nil {
			ips, lerr := net.LookupIP(host)
			if lerr != nil || len(ips) == 0 {
				return fmt.Errorf("%w %q: %v", errBadAddr, addr, lerr)
			}
			ip, _ = netip.AddrFromSlice(ips[0])
		}
	}
	ip = ip.Unmap()
	var raw [16]byte
	family := 6
	if ip.Is4() {
		family = 4
		b := ip.As4()
		copy(raw[:], b[:])
	} else {
		raw = ip.As16()
	}
	C.rb_sockaddr(ss, C.int(family), (*C.uint8_t)(unsafe.Pointer(&raw[0])), C.int(pn))
	return nil
}

// formatAddr formats the local or peer address of id as "ip:port".
func formatAddr(id *C.struct_rdma_cm_id, peer bool) string {
	var buf [80]C.char
	p := C.int(0)
	if peer {
		p = 1
	}
	C.rb_format_addr(id, p, &buf[0], C.int(len(buf)))
	return C.GoString(&buf[0])
}
