package blockdevtest

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
)

// testCapabilities: the backend exposes at least Caps.Capabilities.
func testCapabilities(t *testing.T, e *env) {
	if got := Capabilities(e.b); got&e.caps.Capabilities != e.caps.Capabilities {
		t.Fatalf("backend exposes %v, want at least %v (missing %v)", got, e.caps.Capabilities, e.caps.Capabilities&^got)
	}
}

// chanDone is a blockdev.Completion that sends the result on a channel.
type chanDone chan error

func (c chanDone) IODone(err error) { c <- err }

// asyncRoundTrip writes a pattern to block lba and reads it back through
// Async (fixed, when reg != 0). It reports whether the backend took both
// I/Os on its fast path; a refusal (false) is not a failure, but what the
// backend does take must be right.
func (e *env) asyncRoundTrip(t *testing.T, lba uint64, gen uint64, reg blockdev.FixedRegion, region []byte) bool {
	t.Helper()
	a, ok := e.b.(blockdev.Async)
	if !ok {
		return false
	}
	var w, r []byte
	if region != nil {
		w, r = region[:e.bs], region[e.bs:2*e.bs]
		pattern(w, e.bs, lba, gen)
	} else {
		w, r = patterned(e.bs, e.bs, lba, gen), AlignedBuffer(e.bs)
	}
	want := append([]byte(nil), w...)
	done := make(chanDone, 1)
	fb, _ := e.b.(blockdev.FixedBuffers)
	var took bool
	if reg != 0 && fb != nil {
		took = fb.SubmitWriteFixed(w, lba, 0, reg, done)
	} else {
		took = a.SubmitWrite(w, lba, 0, done)
	}
	if !took {
		e.write(t, lba, w)
	} else if err := <-done; err != nil {
		t.Fatalf("async write at lba %d: %v", lba, err)
	}
	if reg != 0 && fb != nil {
		took = fb.SubmitReadFixed(r, lba, reg, done) && took
	} else {
		took = a.SubmitRead(r, lba, done) && took
	}
	if took {
		if err := <-done; err != nil {
			t.Fatalf("async read at lba %d: %v", lba, err)
		}
	} else if err := e.b.ReadAt([][]byte{r}, lba); err != nil {
		t.Fatalf("ReadAt(lba %d): %v", lba, err)
	}
	e.expect(t, lba, r, want, "async round trip")
	return took
}

// testResize: a Resizer shrinks and grows in place: blocks below the
// smaller size keep their data, blocks past the old end read zeroes
// (also those that held data before a shrink), the range checks follow
// the new size, and the optional capabilities — and what the fast path
// took before — still work afterwards.
func testResize(t *testing.T, e *env) {
	rs, ok := e.b.(blockdev.Resizer)
	if !ok {
		if e.caps.Capabilities&CapResizer != 0 {
			t.Fatal("backend does not implement blockdev.Resizer")
		}
		t.Skip("backend has no Resizer")
	}
	capsBefore := Capabilities(e.b)
	bs := e.bs
	first := patterned(4*bs, bs, 0, 70)
	e.write(t, 0, first)
	last := patterned(bs, bs, e.blocks-1, 71)
	e.write(t, e.blocks-1, last)

	// What the fast path takes before the resize it must take after.
	asyncBefore := e.asyncRoundTrip(t, 8, 72, 0, nil)
	var reg blockdev.FixedRegion
	var region []byte
	fb, _ := e.b.(blockdev.FixedBuffers)
	if fb != nil {
		region = AlignedBuffer(2 * bs)
		var err error
		if reg, err = fb.RegisterFixed(region); err != nil {
			if !errors.Is(err, blockdev.ErrFixedUnavailable) {
				t.Fatalf("RegisterFixed: %v", err)
			}
			reg, region = 0, nil
		} else {
			defer fb.UnregisterFixed(reg)
		}
	}
	fixedBefore := reg != 0 && e.asyncRoundTrip(t, 9, 73, reg, region)

	half := e.blocks/2 + 3 // not on a power-of-two boundary (mem chunks)
	above := patterned(2*bs, bs, half, 77)
	e.write(t, half, above) // cut by the shrink: must read zeroes after the grow
	if err := rs.Resize(half); err != nil {
		t.Fatalf("Resize(%d) (shrink): %v", half, err)
	}
	if got := e.b.Blocks(); got != half {
		t.Fatalf("Blocks() = %d after Resize(%d)", got, half)
	}
	e.expect(t, 0, e.read(t, 0, 4), first, "blocks below the new end after shrink")
	p := AlignedBuffer(bs)
	wantErr(t, e.b.ReadAt([][]byte{p}, half), blockdev.ErrOutOfRange, "ReadAt at the old range after shrink")
	wantErr(t, e.b.WriteAt([][]byte{p}, e.blocks-1, 0), blockdev.ErrOutOfRange, "WriteAt past the new end")
	wantErr(t, e.b.WriteZeroes(half-1, 2), blockdev.ErrOutOfRange, "WriteZeroes across the new end")
	e.expectZero(t, half-1, 1, "last block after shrink") // never written

	grown := 2 * e.blocks
	if err := rs.Resize(grown); err != nil {
		t.Fatalf("Resize(%d) (grow): %v", grown, err)
	}
	if got := e.b.Blocks(); got != grown {
		t.Fatalf("Blocks() = %d after Resize(%d)", got, grown)
	}
	e.expect(t, 0, e.read(t, 0, 4), first, "blocks below the old end after grow")
	e.expectZero(t, e.blocks-1, 1, "a block written before the shrink, after growing past it")
	e.expectZero(t, half, 2, "blocks just past the shrunk end, after growing past them")
	e.expectZero(t, grown-1, 1, "the new last block")
	newLast := patterned(bs, bs, grown-1, 74)
	e.write(t, grown-1, newLast)
	e.expect(t, grown-1, e.read(t, grown-1, 1), newLast, "write to the new last block")

	if got := Capabilities(e.b); got != capsBefore {
		t.Fatalf("capabilities %v after resize, were %v", got, capsBefore)
	}
	if asyncAfter := e.asyncRoundTrip(t, grown-2, 75, 0, nil); asyncBefore && !asyncAfter {
		t.Fatal("the async fast path took I/O before the resize and refuses it after")
	}
	if fixedBefore && !e.asyncRoundTrip(t, grown-3, 76, reg, region) {
		t.Fatal("fixed-buffer I/O taken before the resize is refused after")
	}
}

// testResizeClosed: Resize after Close fails with ErrClosed.
func testResizeClosed(t *testing.T, e *env) {
	rs, ok := e.b.(blockdev.Resizer)
	if !ok {
		t.Skip("backend has no Resizer")
	}
	if err := e.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, rs.Resize(e.blocks), blockdev.ErrClosed, "Resize after Close")
}
