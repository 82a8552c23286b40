// Package targettest holds contract checks for types the target core
// consumes, for their implementers' tests.
package targettest

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/target"
)

// CheckUnwrapper checks the target.Unwrapper contract on a backend
// wrapper w (DESIGN §4: optional capabilities survive wrapping):
//
//   - Unwrap returns the same backend on every call (the core resolves it
//     once, at AddNamespace, and keeps using it);
//   - the backend it returns (followed to the end of the chain) has the
//     wrapper's block size and block count, so Identify and range checks
//     agree whichever of the two they ask;
//   - every optional capability of that backend (blockdev.NonBlocking,
//     Async, FixedBuffers, Resizer) is therefore what the core sees —
//     reported with t.Logf for the reader of a failing test.
//
// A wrapper that returns nil (it wants to be used as it is) must then not
// hide anything the core could use: CheckUnwrapper fails when w itself
// lacks Async or FixedBuffers that want (the backend w wraps) has.
func CheckUnwrapper(t testing.TB, w blockdev.Backend, want blockdev.Backend) {
	t.Helper()
	u, ok := w.(target.Unwrapper)
	if !ok {
		t.Fatalf("%T does not implement target.Unwrapper", w)
		return
	}
	first := u.Unwrap()
	for range 3 {
		if got := u.Unwrap(); got != first {
			t.Fatalf("%T.Unwrap returned %T then %T: it must be stable", w, first, got)
			return
		}
	}
	if first == nil {
		if hides(w, want) {
			t.Fatalf("%T unwraps to nil (used as it is) but hides capabilities of %T", w, want)
			return
		}
		return
	}
	end := first
	for range 8 {
		uu, ok := end.(target.Unwrapper)
		if !ok || uu.Unwrap() == nil {
			break
		}
		end = uu.Unwrap()
	}
	if end != want {
		t.Fatalf("%T unwraps to %T, want the backend it wraps (%T)", w, end, want)
		return
	}
	if end.BlockSize() != w.BlockSize() || end.Blocks() != w.Blocks() {
		t.Fatalf("%T: %d blocks of %d bytes, the backend it unwraps to %d of %d", w, w.Blocks(), w.BlockSize(),
			end.Blocks(), end.BlockSize())
		return
	}
	_, async := end.(blockdev.Async)
	_, fixed := end.(blockdev.FixedBuffers)
	_, resize := end.(blockdev.Resizer)
	t.Logf("%T unwraps to %T: async %v, fixed buffers %v, resizer %v", w, end, async, fixed, resize)
}

// hides reports an optional data-path capability of in that w lacks.
func hides(w, in blockdev.Backend) bool {
	if _, ok := in.(blockdev.Async); ok {
		if _, ok := w.(blockdev.Async); !ok {
			return true
		}
	}
	if _, ok := in.(blockdev.FixedBuffers); ok {
		if _, ok := w.(blockdev.FixedBuffers); !ok {
			return true
		}
	}
	return false
}
