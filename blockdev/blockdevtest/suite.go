package blockdevtest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
)

// OpenFunc creates a fresh backend of blocks logical blocks of blockSize
// bytes that reads back as zeroes. It reports failure with t.Fatal; it may
// register its own cleanups with t.Cleanup.
type OpenFunc func(t *testing.T, blocks uint64, blockSize int) blockdev.Backend

// Caps describes what a backend promises beyond the common contract.
type Caps struct {
	// Persistent: reads return what was last written (false for null).
	// Without it the suite checks only errors, not data.
	Persistent bool
	// Reopen, if set, reopens the storage that the most recent call to the
	// OpenFunc with the same t created, after the suite has closed it. The
	// suite then checks that flushed and FUA writes survive.
	Reopen func(t *testing.T) blockdev.Backend
	// DiscardUndefined: discarded blocks need not read back as zeroes
	// (block devices). The suite then only checks that Discard leaves
	// neighbouring blocks alone.
	DiscardUndefined bool
	// Capabilities the backend must expose (by type assertion, as the
	// target finds them). A wrapper run through the suite lists its inner
	// backend's, so hiding one fails.
	Capabilities Capability
}

// geometry is one device shape the suite runs on.
type geometry struct {
	blocks    uint64
	blockSize int
}

var geometries = []geometry{
	{blocks: 1024, blockSize: 512}, // 512 KiB: 8 mem chunks
	{blocks: 256, blockSize: 4096}, // 1 MiB: 16 mem chunks
}

// Run runs the contract suite against the backends open creates.
func Run(t *testing.T, open OpenFunc, caps Caps) {
	tests := []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"Sizes", testSizes},
		{"RoundTripSingle", testRoundTripSingle},
		{"RoundTripVectored", testRoundTripVectored},
		{"ManyBuffers", testManyBuffers},
		{"Unaligned", testUnaligned},
		{"Empty", testEmpty},
		{"OutOfRange", testOutOfRange},
		{"FUA", testFUA},
		{"Flush", testFlush},
		{"WriteZeroes", testWriteZeroes},
		{"Discard", testDiscard},
		{"ConcurrentDisjointWriters", testConcurrent},
		{"Close", testClose},
		{"Reopen", testReopen},
		{"Capabilities", testCapabilities},
		{"Resize", testResize},
		{"ResizeClosed", testResizeClosed},
	}
	for _, g := range geometries {
		t.Run(fmt.Sprintf("bs%d", g.blockSize), func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					b := open(t, g.blocks, g.blockSize)
					if b == nil {
						t.Fatal("open returned a nil backend")
					}
					t.Cleanup(func() {
						if err := b.Close(); err != nil && !errors.Is(err, blockdev.ErrClosed) {
							t.Errorf("Close: %v", err)
						}
					})
					tc.fn(t, &env{b: b, caps: caps, blocks: g.blocks, bs: g.blockSize})
				})
			}
		})
	}
}

// env is what each test works with.
type env struct {
	b      blockdev.Backend
	caps   Caps
	blocks uint64
	bs     int
}

// AlignedBuffer returns a zeroed n-byte slice whose first byte is 4096-byte
// aligned.
func AlignedBuffer(n int) []byte {
	const align = 4096
	raw := make([]byte, n+align)
	off := (align - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%align)) % align
	return raw[off : off+n : off+n]
}

// pattern fills p, which starts at block lba, with bytes that depend on
// the block number, the byte's position and gen, so a block written to the
// wrong place or a stale generation is detected.
func pattern(p []byte, bs int, lba uint64, gen uint64) {
	for i := range p {
		blk := lba + uint64(i/bs)
		x := blk*0x9E3779B97F4A7C15 ^ gen*0xBF58476D1CE4E5B9 ^ uint64(i%bs)*0x94D049BB133111EB
		x ^= x >> 29
		p[i] = byte(x ^ x>>17)
	}
}

func patterned(n int, bs int, lba, gen uint64) []byte {
	p := AlignedBuffer(n)
	pattern(p, bs, lba, gen)
	return p
}

// split cuts p into pieces of the given sizes (the last piece takes the rest).
func split(p []byte, sizes ...int) [][]byte {
	var v [][]byte
	for _, s := range sizes {
		v = append(v, p[:s])
		p = p[s:]
	}
	if len(p) > 0 {
		v = append(v, p)
	}
	return v
}

func (e *env) write(t *testing.T, lba uint64, p []byte) {
	t.Helper()
	if err := e.b.WriteAt([][]byte{p}, lba, 0); err != nil {
		t.Fatalf("WriteAt(lba %d, %d bytes): %v", lba, len(p), err)
	}
}

func (e *env) read(t *testing.T, lba uint64, nblocks int) []byte {
	t.Helper()
	p := AlignedBuffer(nblocks * e.bs)
	for i := range p {
		p[i] = 0xA5 // so that a read that leaves the buffer alone is caught
	}
	if err := e.b.ReadAt([][]byte{p}, lba); err != nil {
		t.Fatalf("ReadAt(lba %d, %d blocks): %v", lba, nblocks, err)
	}
	return p
}

// expect compares got, read at block lba, with want block by block.
func (e *env) expect(t *testing.T, lba uint64, got, want []byte, what string) {
	t.Helper()
	if !e.caps.Persistent {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: got %d bytes, want %d", what, len(got), len(want))
	}
	for off := 0; off < len(got); off += e.bs {
		if !bytes.Equal(got[off:off+e.bs], want[off:off+e.bs]) {
			t.Fatalf("%s: block %d differs from what was expected", what, lba+uint64(off/e.bs))
		}
	}
}

// expectZero checks that blocks [lba, lba+n) read back as zeroes (for
// non-persistent backends too: null reads zeroes).
func (e *env) expectZero(t *testing.T, lba uint64, n int, what string) {
	t.Helper()
	got := e.read(t, lba, n)
	for off := 0; off < len(got); off += e.bs {
		for _, c := range got[off : off+e.bs] {
			if c != 0 {
				t.Fatalf("%s: block %d is not zero", what, lba+uint64(off/e.bs))
			}
		}
	}
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

func testSizes(t *testing.T, e *env) {
	if got := e.b.BlockSize(); got != e.bs {
		t.Fatalf("BlockSize() = %d, want %d", got, e.bs)
	}
	if got := e.b.Blocks(); got != e.blocks {
		t.Fatalf("Blocks() = %d, want %d", got, e.blocks)
	}
	// A fresh backend reads as zeroes, first and last block included.
	e.expectZero(t, 0, 1, "fresh device")
	e.expectZero(t, e.blocks-1, 1, "fresh device")
}

func testRoundTripSingle(t *testing.T, e *env) {
	cases := []struct {
		lba uint64
		n   int
	}{{0, 1}, {1, 1}, {e.blocks / 2, 8}, {e.blocks - 1, 1}, {e.blocks - 8, 8}, {17, 33}}
	for gen, c := range cases {
		want := patterned(c.n*e.bs, e.bs, c.lba, uint64(gen))
		e.write(t, c.lba, want)
		e.expect(t, c.lba, e.read(t, c.lba, c.n), want, fmt.Sprintf("lba %d n %d", c.lba, c.n))
	}
	// Overwrite a range in the middle of an earlier write: the edges keep
	// the old generation.
	before := patterned(10*e.bs, e.bs, 100, 50)
	e.write(t, 100, before)
	mid := patterned(4*e.bs, e.bs, 103, 51)
	e.write(t, 103, mid)
	want := append(append(append([]byte(nil), before[:3*e.bs]...), mid...), before[7*e.bs:]...)
	e.expect(t, 100, e.read(t, 100, 10), want, "partial overwrite")
}

func testRoundTripVectored(t *testing.T, e *env) {
	bs := e.bs
	const lba = 5
	want := patterned(4*bs, bs, lba, 1)
	// Pieces that straddle block boundaries; only the total is whole blocks.
	if err := e.b.WriteAt(split(want, bs/2, bs, 2*bs), lba, 0); err != nil {
		t.Fatalf("vectored WriteAt: %v", err)
	}
	e.expect(t, lba, e.read(t, lba, 4), want, "vectored write, single read")

	got := AlignedBuffer(4 * bs)
	if err := e.b.ReadAt(split(got, 3*bs, bs/4), lba); err != nil {
		t.Fatalf("vectored ReadAt: %v", err)
	}
	e.expect(t, lba, got, want, "vectored read")

	// Block-sized, separately allocated buffers, in order.
	vec := make([][]byte, 4)
	for i := range vec {
		vec[i] = AlignedBuffer(bs)
	}
	if err := e.b.ReadAt(vec, lba); err != nil {
		t.Fatalf("ReadAt into separate buffers: %v", err)
	}
	e.expect(t, lba, bytes.Join(vec, nil), want, "read into separate buffers")

	// Zero-length pieces in a vector are ignored.
	if err := e.b.WriteAt([][]byte{nil, want[:bs], {}, want[bs : 2*bs]}, 200%e.blocks, 0); err != nil {
		t.Fatalf("WriteAt with empty pieces: %v", err)
	}
	e.expect(t, 200%e.blocks, e.read(t, 200%e.blocks, 2), want[:2*bs], "empty pieces")
}

func testManyBuffers(t *testing.T, e *env) {
	const n = 130 // more than one batch of iovecs in the file backend
	const lba = 7
	want := patterned(n*e.bs, e.bs, lba, 3)
	vec := make([][]byte, n)
	for i := range vec {
		vec[i] = want[i*e.bs : (i+1)*e.bs]
	}
	if err := e.b.WriteAt(vec, lba, 0); err != nil {
		t.Fatalf("WriteAt(%d buffers): %v", n, err)
	}
	e.expect(t, lba, e.read(t, lba, n), want, "many-buffer write")
	got := AlignedBuffer(n * e.bs)
	for i := range vec {
		vec[i] = got[i*e.bs : (i+1)*e.bs]
	}
	if err := e.b.ReadAt(vec, lba); err != nil {
		t.Fatalf("ReadAt(%d buffers): %v", n, err)
	}
	e.expect(t, lba, got, want, "many-buffer read")
}

func testUnaligned(t *testing.T, e *env) {
	bs := e.bs
	old := patterned(2*bs, bs, 9, 4)
	e.write(t, 9, old)
	p := patterned(2*bs, bs, 9, 5)
	for _, v := range [][][]byte{
		{p[:bs/2]},
		{p[:bs+1]},
		{p[:bs/2], p[bs : bs+bs/4]},
		{p[:2*bs-1]},
	} {
		wantErr(t, e.b.WriteAt(v, 9, 0), blockdev.ErrUnaligned, "WriteAt partial block")
		wantErr(t, e.b.WriteAt(v, 9, blockdev.WriteFUA), blockdev.ErrUnaligned, "FUA WriteAt partial block")
		wantErr(t, e.b.ReadAt(v, 9), blockdev.ErrUnaligned, "ReadAt partial block")
	}
	e.expect(t, 9, e.read(t, 9, 2), old, "blocks after rejected writes")
}

func testEmpty(t *testing.T, e *env) {
	for _, lba := range []uint64{0, e.blocks} {
		if err := e.b.ReadAt(nil, lba); err != nil {
			t.Fatalf("ReadAt(nil, %d): %v", lba, err)
		}
		if err := e.b.WriteAt([][]byte{{}}, lba, 0); err != nil {
			t.Fatalf("WriteAt(empty, %d): %v", lba, err)
		}
		if err := e.b.WriteZeroes(lba, 0); err != nil {
			t.Fatalf("WriteZeroes(%d, 0): %v", lba, err)
		}
		if err := e.b.Discard(lba, 0); err != nil {
			t.Fatalf("Discard(%d, 0): %v", lba, err)
		}
	}
	wantErr(t, e.b.ReadAt(nil, e.blocks+1), blockdev.ErrOutOfRange, "empty ReadAt past the end")
	wantErr(t, e.b.WriteZeroes(math.MaxUint64, 0), blockdev.ErrOutOfRange, "empty WriteZeroes past the end")
}

func testOutOfRange(t *testing.T, e *env) {
	bs := e.bs
	last := e.blocks - 1
	old := patterned(bs, bs, last, 6)
	e.write(t, last, old)
	one := patterned(bs, bs, 0, 7)
	two := patterned(2*bs, bs, 0, 7)
	type io struct {
		lba uint64
		buf []byte
	}
	for _, c := range []io{
		{e.blocks, one},
		{last, two}, // straddles the end: must not write the last block
		{e.blocks + 5, one},
		{math.MaxUint64, one},     // lba+1 wraps
		{math.MaxUint64 - 1, two}, // lba+2 wraps
		{math.MaxUint64 - uint64(len(two)/bs) + 1, two},              // lba+n == 2^64 exactly
		{math.MaxUint64 / uint64(bs), one},                           // byte offset overflows
		{(math.MaxUint64/uint64(bs))/2 + 1, patterned(bs, bs, 0, 7)}, // byte offset > int64
	} {
		what := fmt.Sprintf("lba %d, %d blocks", c.lba, len(c.buf)/bs)
		wantErr(t, e.b.WriteAt([][]byte{c.buf}, c.lba, 0), blockdev.ErrOutOfRange, "WriteAt "+what)
		wantErr(t, e.b.WriteAt([][]byte{c.buf}, c.lba, blockdev.WriteFUA), blockdev.ErrOutOfRange, "FUA WriteAt "+what)
		wantErr(t, e.b.ReadAt([][]byte{c.buf}, c.lba), blockdev.ErrOutOfRange, "ReadAt "+what)
	}
	for _, c := range []struct{ lba, n uint64 }{
		{e.blocks, 1},
		{last, 2},
		{0, e.blocks + 1},
		{1, math.MaxUint64},              // lba+n wraps
		{math.MaxUint64, 1},              // lba+n wraps
		{math.MaxUint64, math.MaxUint64}, // both huge
		{e.blocks / 2, math.MaxUint64 - e.blocks/2 + 1}, // lba+n == 2^64 exactly
	} {
		what := fmt.Sprintf("(%d, %d)", c.lba, c.n)
		wantErr(t, e.b.WriteZeroes(c.lba, c.n), blockdev.ErrOutOfRange, "WriteZeroes"+what)
		wantErr(t, e.b.Discard(c.lba, c.n), blockdev.ErrOutOfRange, "Discard"+what)
	}
	e.expect(t, last, e.read(t, last, 1), old, "last block after rejected requests")
	// The whole device is still addressable.
	if err := e.b.WriteZeroes(0, e.blocks); err != nil {
		t.Fatalf("WriteZeroes(whole device): %v", err)
	}
	e.expectZero(t, last, 1, "last block after zeroing the device")
}

func testFUA(t *testing.T, e *env) {
	for i, lba := range []uint64{0, 3, e.blocks - 4} {
		want := patterned(4*e.bs, e.bs, lba, uint64(10+i))
		if err := e.b.WriteAt(split(want, e.bs), lba, blockdev.WriteFUA); err != nil {
			t.Fatalf("FUA WriteAt(lba %d): %v", lba, err)
		}
		e.expect(t, lba, e.read(t, lba, 4), want, "FUA write")
	}
}

func testFlush(t *testing.T, e *env) {
	if err := e.b.Flush(); err != nil {
		t.Fatalf("Flush on a fresh device: %v", err)
	}
	want := patterned(3*e.bs, e.bs, 11, 20)
	e.write(t, 11, want)
	if err := e.b.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	e.expect(t, 11, e.read(t, 11, 3), want, "after Flush")
}

// zeroRange fills [0, span) with a pattern, applies op to the middle and
// checks the neighbours; zeroes says whether the middle must read as zero.
func zeroRange(t *testing.T, e *env, op func(lba, n uint64) error, name string, zeroes bool) {
	span := min(e.blocks, 400)
	all := patterned(int(span)*e.bs, e.bs, 0, 30)
	e.write(t, 0, all)
	cases := []struct{ lba, n uint64 }{
		{3, span - 6},     // crosses several mem chunks, unaligned at both ends
		{1, 1},            // one block
		{span - 2, 1},     // near the end of the patterned span
		{e.blocks - 1, 1}, // the last block of the device
	}
	for _, c := range cases {
		if err := op(c.lba, c.n); err != nil {
			t.Fatalf("%s(%d, %d): %v", name, c.lba, c.n, err)
		}
	}
	got := e.read(t, 0, int(span))
	inCase := func(blk uint64) bool {
		for _, c := range cases {
			if blk >= c.lba && blk < c.lba+c.n {
				return true
			}
		}
		return false
	}
	for blk := uint64(0); blk < span; blk++ {
		g := got[blk*uint64(e.bs) : (blk+1)*uint64(e.bs)]
		switch {
		case inCase(blk):
			if zeroes && !bytes.Equal(g, make([]byte, e.bs)) {
				t.Fatalf("%s: block %d is not zero", name, blk)
			}
		case e.caps.Persistent:
			if !bytes.Equal(g, all[blk*uint64(e.bs):(blk+1)*uint64(e.bs)]) {
				t.Fatalf("%s: neighbouring block %d was changed", name, blk)
			}
		}
	}
	if zeroes {
		e.expectZero(t, e.blocks-1, 1, name+" of the last block")
	}
	// Writes after zeroing land normally.
	want := patterned(2*e.bs, e.bs, 4, 31)
	e.write(t, 4, want)
	e.expect(t, 4, e.read(t, 4, 2), want, "write after "+name)
}

func testWriteZeroes(t *testing.T, e *env) {
	zeroRange(t, e, e.b.WriteZeroes, "WriteZeroes", true)
}

func testDiscard(t *testing.T, e *env) {
	zeroRange(t, e, e.b.Discard, "Discard", !e.caps.DiscardUndefined)
}

func testConcurrent(t *testing.T, e *env) {
	const writers = 8
	const region = 16 // blocks per writer
	const rounds = 20
	bs := e.bs
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := uint64(w * region)
			buf := AlignedBuffer(region * bs)
			got := AlignedBuffer(region * bs)
			for r := range rounds {
				pattern(buf, bs, base, uint64(r))
				// Vary the vector shape from round to round.
				var vec [][]byte
				switch r % 3 {
				case 0:
					vec = [][]byte{buf}
				case 1:
					vec = split(buf, bs, 3*bs, bs/2)
				default:
					vec = split(buf, 8*bs)
				}
				flags := blockdev.WriteFlags(0)
				if r%5 == 4 {
					flags = blockdev.WriteFUA
				}
				if err := e.b.WriteAt(vec, base, flags); err != nil {
					errs <- fmt.Errorf("writer %d round %d: WriteAt: %w", w, r, err)
					return
				}
				if err := e.b.ReadAt([][]byte{got}, base); err != nil {
					errs <- fmt.Errorf("writer %d round %d: ReadAt: %w", w, r, err)
					return
				}
				if e.caps.Persistent && !bytes.Equal(got, buf) {
					errs <- fmt.Errorf("writer %d round %d: read back differs", w, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		base := uint64(w * region)
		want := patterned(region*bs, bs, base, rounds-1)
		e.expect(t, base, e.read(t, base, region), want, fmt.Sprintf("writer %d final", w))
	}
}

func testClose(t *testing.T, e *env) {
	e.write(t, 0, patterned(e.bs, e.bs, 0, 40))
	if err := e.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	p := AlignedBuffer(e.bs)
	wantErr(t, e.b.ReadAt([][]byte{p}, 0), blockdev.ErrClosed, "ReadAt after Close")
	wantErr(t, e.b.WriteAt([][]byte{p}, 0, 0), blockdev.ErrClosed, "WriteAt after Close")
	wantErr(t, e.b.WriteAt([][]byte{p}, 0, blockdev.WriteFUA), blockdev.ErrClosed, "FUA WriteAt after Close")
	wantErr(t, e.b.Flush(), blockdev.ErrClosed, "Flush after Close")
	wantErr(t, e.b.WriteZeroes(0, 1), blockdev.ErrClosed, "WriteZeroes after Close")
	wantErr(t, e.b.Discard(0, 1), blockdev.ErrClosed, "Discard after Close")
	wantErr(t, e.b.Close(), blockdev.ErrClosed, "second Close")
}

func testReopen(t *testing.T, e *env) {
	if e.caps.Reopen == nil || !e.caps.Persistent {
		t.Skip("backend has no Reopen")
	}
	bs := e.bs
	flushed := patterned(8*bs, bs, 0, 60)
	e.write(t, 0, flushed)
	fua := patterned(8*bs, bs, 8, 61)
	if err := e.b.WriteAt(split(fua, bs/2, 3*bs), 8, blockdev.WriteFUA); err != nil {
		t.Fatalf("FUA WriteAt: %v", err)
	}
	if err := e.b.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	e.write(t, 16, patterned(4*bs, bs, 16, 62))
	if err := e.b.WriteZeroes(17, 2); err != nil {
		t.Fatalf("WriteZeroes: %v", err)
	}
	last := patterned(bs, bs, e.blocks-1, 63)
	e.write(t, e.blocks-1, last) // made durable by Close
	if err := e.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	r := e.caps.Reopen(t)
	defer func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close after reopen: %v", err)
		}
	}()
	if r.BlockSize() != bs || r.Blocks() != e.blocks {
		t.Fatalf("reopened geometry %d x %d, want %d x %d", r.Blocks(), r.BlockSize(), e.blocks, bs)
	}
	re := &env{b: r, caps: e.caps, blocks: e.blocks, bs: bs}
	re.expect(t, 0, re.read(t, 0, 8), flushed, "flushed write after reopen")
	re.expect(t, 8, re.read(t, 8, 8), fua, "FUA write after reopen")
	re.expectZero(t, 17, 2, "zeroed blocks after reopen")
	re.expect(t, e.blocks-1, re.read(t, e.blocks-1, 1), last, "write before Close after reopen")
}
