package blockdevtest

import (
	"strings"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Capability is a set of the optional interfaces a Backend may implement.
// The target finds them by type assertion on the Backend it is given, so
// a wrapper that does not expose its inner backend's capabilities takes
// the fast path away silently; Caps.Capabilities lets the suite catch
// that.
type Capability uint8

const (
	CapAsync        Capability = 1 << iota // blockdev.Async
	CapAsyncBatcher                        // blockdev.AsyncBatcher
	CapFixedBuffers                        // blockdev.FixedBuffers
	CapResizer                             // blockdev.Resizer
	CapNonBlocking                         // blockdev.NonBlocking reporting true
	CapPoller                              // blockdev.Poller
)

// Capabilities returns what b implements.
func Capabilities(b blockdev.Backend) Capability {
	var c Capability
	if _, ok := b.(blockdev.Async); ok {
		c |= CapAsync
	}
	if _, ok := b.(blockdev.AsyncBatcher); ok {
		c |= CapAsyncBatcher
	}
	if _, ok := b.(blockdev.FixedBuffers); ok {
		c |= CapFixedBuffers
	}
	if _, ok := b.(blockdev.Resizer); ok {
		c |= CapResizer
	}
	if nb, ok := b.(blockdev.NonBlocking); ok && nb.NonBlocking() {
		c |= CapNonBlocking
	}
	if _, ok := b.(blockdev.Poller); ok {
		c |= CapPoller
	}
	return c
}

// String lists the capabilities, e.g. "async|resizer".
func (c Capability) String() string {
	names := []string{"async", "async-batcher", "fixed-buffers", "resizer", "non-blocking", "poller"}
	var parts []string
	for i, n := range names {
		if c&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}
