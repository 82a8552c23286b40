package nvme

import "encoding/binary"

// Structured fuzz inputs for decoders of large fixed-size pages.
//
// Go's fuzzing engine minimises every input that finds new coverage, and
// its minimiser is quadratic in the input's length (it tries removing
// every byte range). A decoder that needs a 4 KiB Identify page or a
// 1 KiB-per-entry discovery log makes every interesting input at least
// that long, so the engine spent its whole budget minimising (41, 165 and
// 5,841 executions in 60 s for the discovery log, Identify Controller
// and descriptor list harnesses). These harnesses therefore read a short
// input (at most fuzzInputMax bytes; the rest is ignored, so longer inputs
// are never interesting) and build the page from it.

// fuzzInputMax bounds the part of a fuzz input the structured harnesses
// read.
const fuzzInputMax = 256

// fuzzCap cuts a fuzz input to fuzzInputMax bytes.
func fuzzCap(in []byte) []byte { return in[:min(len(in), fuzzInputMax)] }

// patchInput builds an n-byte page from base (copied, zero-padded or cut
// to n; zeroes when nil) and the patches in in: each is a 2-byte
// little-endian offset (taken modulo n), a length byte, and that many
// bytes (cut at the end of the page and of the input). Any byte of the
// page is reachable with a few bytes of input.
func patchInput(in, base []byte, n int) []byte {
	page := make([]byte, n)
	copy(page, base)
	if n == 0 {
		return page
	}
	for len(in) >= 3 {
		off := int(binary.LittleEndian.Uint16(in)) % n
		l := int(in[2])
		in = in[3:]
		l = min(l, len(in))
		copy(page[off:], in[:l])
		in = in[l:]
	}
	return page
}

// tileInput builds a page of up to n bytes by repeating unit reps times,
// so that long lists of small records come from a short input.
func tileInput(unit []byte, reps, n int) []byte {
	if len(unit) == 0 {
		return nil
	}
	page := make([]byte, 0, min(n, len(unit)*reps))
	for range reps {
		if len(page)+len(unit) > n {
			page = append(page, unit[:n-len(page)]...)
			break
		}
		page = append(page, unit...)
	}
	return page
}
