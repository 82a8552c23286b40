package tcppdu

import (
	"bufio"
	"io"
)

// Reading PDUs from a buffered stream. A reader that takes one PDU after
// another gets many of them per socket read in a batch (13 capsule
// responses of a replicated write's burst, a host's queue of commands),
// and io.ReadFull — its io.ReadAtLeast loop around bufio.Reader.Read
// through an interface, per read — costs several times the copy of a
// 24-byte PDU. These helpers take what the read buffer already holds
// directly and leave everything else (a PDU split across socket reads,
// data larger than the buffer) to io.ReadFull.

// Buffered returns the bytes r holds, without reading its source or
// consuming them; they are valid until r's next read.
func Buffered(r *bufio.Reader) []byte {
	p, _ := r.Peek(r.Buffered()) // cannot fail: n ≤ Buffered
	return p
}

// ReadFull fills b from r, as io.ReadFull: with one Read (a copy) when r
// holds all of b. A zero-length b goes to io.ReadFull, since bufio's Read
// of nothing may return an error the caller has not seen yet.
func ReadFull(r *bufio.Reader, b []byte) error {
	n := 0
	if len(b) > 0 && len(b) <= r.Buffered() {
		n, _ = r.Read(b) // all of b, without reading the source
	}
	if n == len(b) {
		return nil
	}
	_, err := io.ReadFull(r, b[n:])
	return err
}

// HeaderRest completes a PDU header whose common header the caller copied
// into h from p, the bytes Buffered returned, without consuming them: when
// p holds all of h, it copies the rest of h from p and discards the whole
// header from r (one Peek and one Discard per PDU) and reports true.
// Otherwise it discards the peeked common header, if p held it, and
// reports false: the caller reads h[CommonHeaderSize:] from r.
func HeaderRest(r *bufio.Reader, p, h []byte) bool {
	if len(p) >= len(h) {
		copy(h[CommonHeaderSize:], p[CommonHeaderSize:])
		_, _ = r.Discard(len(h)) // cannot fail: buffered
		return true
	}
	if len(p) >= CommonHeaderSize {
		_, _ = r.Discard(CommonHeaderSize)
	}
	return false
}
