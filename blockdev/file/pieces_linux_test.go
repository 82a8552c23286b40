package file

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
)

// waitDone is one completion from done, failing the test instead of
// hanging it when none comes.
func waitDone(t *testing.T, done chanDone) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("no completion within a minute")
		return nil
	}
}

// ringIdle checks that nothing of b is left on its ring: every entry
// reaped, every slot back on the free list.
func ringIdle(t *testing.T, b *Backend) {
	t.Helper()
	a := b.ring
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.inflight != 0 || len(a.free) != len(a.slots) {
		t.Fatalf("after the I/O: %d entries in flight, %d of %d slots free", b.inflight, len(a.free), len(a.slots))
	}
}

// TestAsyncPieces: with MaxPiece below the I/O size, writes and reads go
// out as several io_uring entries, in flight together (several I/Os at
// once, each of several pieces), and complete once each with every byte
// in place; a piece that falls short makes the whole I/O go through the
// blocking path, whose error the completion reports.
func TestAsyncPieces(t *testing.T) {
	const piece, size, n = 8 << 10, 64 << 10, 8
	b := openAsync(t, Options{BlockSize: 4096, Size: 2 * n * size, MaxPiece: piece + 100})
	if got := b.MaxPieceBytes(); got != piece {
		t.Fatalf("MaxPieceBytes %d, want %d (rounded down to the alignment %d)", got, piece, b.DirectAlign())
	}
	done := make(chanDone, n)
	bufs := make([][]byte, n)
	b.Plug()
	for i := range bufs {
		bufs[i] = AlignedBuffer(size, 4096)
		for j := range bufs[i] {
			bufs[i][j] = byte(i*7 + j/512)
		}
		if !b.SubmitWrite(bufs[i], uint64(i*size/4096), 0, done) {
			t.Fatalf("SubmitWrite %d refused", i)
		}
	}
	b.Unplug()
	for range n {
		if err := waitDone(t, done); err != nil {
			t.Fatal(err)
		}
	}
	backs := make([][]byte, n)
	for i := range backs {
		backs[i] = AlignedBuffer(size, 4096)
		if !b.SubmitRead(backs[i], uint64(i*size/4096), done) {
			t.Fatalf("SubmitRead %d refused", i)
		}
	}
	for range n {
		if err := waitDone(t, done); err != nil {
			t.Fatal(err)
		}
	}
	for i := range backs {
		if !bytes.Equal(backs[i], bufs[i]) {
			t.Fatalf("I/O %d: data differs", i)
		}
		whole := make([]byte, size)
		if err := b.ReadAt([][]byte{whole}, uint64(i*size/4096)); err != nil || !bytes.Equal(whole, bufs[i]) {
			t.Fatalf("I/O %d: ReadAt differs: %v", i, err)
		}
	}
	st := b.Stats()
	if st.AsyncIOs != 2*n || st.PiecedIOs != 2*n {
		t.Fatalf("stats %+v: want %d async I/Os, all pieced", st, 2*n)
	}
	ringIdle(t, b)

	// An I/O of exactly one piece is not pieced.
	one := AlignedBuffer(piece, 4096)
	if !b.SubmitRead(one, 0, done) {
		t.Fatal("one-piece read refused")
	}
	if err := waitDone(t, done); err != nil || !bytes.Equal(one, bufs[0][:piece]) {
		t.Fatalf("one-piece read: %v", err)
	}
	if st := b.Stats(); st.PiecedIOs != 2*n || st.AsyncIOs != 2*n+1 {
		t.Fatalf("stats %+v after a one-piece read", st)
	}

	// Cut the file behind the backend's back in the middle of the last
	// I/O's range: its first pieces read data, the later ones read
	// nothing. The I/O is redone whole, blocking, and fails there.
	last := uint64((2*n - 1) * size / 4096)
	if err := os.Truncate(b.path, int64(last)*4096+size/2); err != nil {
		t.Fatal(err)
	}
	cut := AlignedBuffer(size, 4096)
	if !b.SubmitRead(cut, last, done) {
		t.Fatal("read of the cut range refused")
	}
	if err := waitDone(t, done); err == nil {
		t.Fatal("read across the cut completed without an error")
	}
	if st := b.Stats(); st.AsyncIOs != 2*n+1 || st.PiecedIOs != 2*n+1 {
		t.Fatalf("stats %+v: the cut read counts as pieced, not as completed async", st)
	}
	ringIdle(t, b)
}

// TestAsyncPiecesFixed: pieces of a READ_FIXED / WRITE_FIXED I/O (a FUA
// write among them) each name the registered buffer; data and counts as
// for plain pieces.
func TestAsyncPiecesFixed(t *testing.T) {
	const size = 64 << 10
	b := openAsync(t, Options{BlockSize: 4096, MaxPiece: 16 << 10})
	region := AlignedBuffer(2*size, 4096)
	reg, err := b.RegisterFixed(region)
	if err != nil {
		t.Skip(err)
	}
	w, r := region[:size], region[size:]
	for i := range w {
		w[i] = byte(i / 4096 * 13)
	}
	done := make(chanDone, 1)
	if !b.SubmitWriteFixed(w, 8, blockdev.WriteFUA, reg, done) {
		t.Fatal("SubmitWriteFixed refused")
	}
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	if !b.SubmitReadFixed(r, 8, reg, done) {
		t.Fatal("SubmitReadFixed refused")
	}
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r, w) {
		t.Fatal("data differs")
	}
	if st := b.Stats(); st.PiecedIOs != 2 || st.FixedIOs != 2 || st.AsyncIOs != 2 || st.FUANative+st.FUAEmulated != 1 {
		t.Fatalf("stats %+v: want 2 pieced fixed async I/Os, one FUA", st)
	}
	ringIdle(t, b)
}

// TestAsyncPiecesNeedRoom: RingEntries counts entries: an I/O of more
// pieces than the backend may keep in flight is left to the blocking path
// (false, nothing submitted), one that fits is taken, and taken again
// once the first has completed (every entry was given back).
func TestAsyncPiecesNeedRoom(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096, MaxPiece: 4096, RingEntries: 8})
	done := make(chanDone, 2)
	if b.SubmitRead(AlignedBuffer(64<<10, 4096), 0, done) {
		t.Fatal("a 16-piece read submitted with room for 8 entries")
	}
	ringIdle(t, b)
	for i := range 3 {
		if !b.SubmitRead(AlignedBuffer(32<<10, 4096), 0, done) {
			t.Fatalf("8-piece read %d refused with room for 8 entries", i)
		}
		if err := waitDone(t, done); err != nil {
			t.Fatal(err)
		}
	}
	ringIdle(t, b)
}

// TestPieceLimit: Options.MaxPiece resolves to a multiple of the direct-I/O
// alignment and of 4 KiB, or 0 (no limit) when negative, too small, or
// unset for a regular file.
func TestPieceLimit(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096})
	al := b.DirectAlign()
	for _, c := range []struct{ want, got int }{
		{0, 0}, {-1, 0}, {al - 1, 0}, {al, al}, {1 << 20, 1 << 20},
		{3*4096 + 100, 3 * 4096}, {255 << 9, 31 << 12}, // null_blk's 255 sectors: 127.5 KiB → 124 KiB
		{4 << 20, 1 << 20}, // one direct-I/O bio at most
	} {
		if got := b.pieceLimit(c.want); got != c.got {
			t.Errorf("pieceLimit(%d) = %d, want %d", c.want, got, c.got)
		}
	}
}
