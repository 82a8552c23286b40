package initiator

import "testing"

// recordRouter records the commands it is given and finishes them.
type recordRouter struct{ got [][2]uint64 }

func (rr *recordRouter) route(c *cmd) {
	rr.got = append(rr.got, [2]uint64{c.lba, c.blocks})
	c.finish(nil)
}

func TestRequestSplitCoversRangeInOrder(t *testing.T) {
	cases := []struct {
		lba, blocks, max uint64
		want             [][2]uint64
	}{
		{0, 0, 8, nil},
		{5, 3, 8, [][2]uint64{{5, 3}}},
		{0, 8, 8, [][2]uint64{{0, 8}}},
		{10, 17, 8, [][2]uint64{{10, 8}, {18, 8}, {26, 1}}},
		{0, 3, 0, [][2]uint64{{0, 1}, {1, 1}, {2, 1}}},
		{1<<64 - 4, 4, 3, [][2]uint64{{1<<64 - 4, 3}, {1<<64 - 1, 1}}},
	}
	for _, tc := range cases {
		done := make(chan *Request, 1)
		r := &Request{Op: IODeallocate, Done: done}
		r.pending.Store(1)
		r.bs, r.failAt = 512, -1
		rr := &recordRouter{}
		r.split(tc.lba, tc.blocks, tc.max, rr, nil)
		r.release()
		if got := <-done; got.Err != nil {
			t.Fatal(got.Err)
		}
		if len(rr.got) != len(tc.want) {
			t.Fatalf("%+v: got %v", tc, rr.got)
		}
		for i := range rr.got {
			if rr.got[i] != tc.want[i] {
				t.Fatalf("%+v: got %v", tc, rr.got)
			}
		}
	}
}

func TestMaxBlocksPerCommand(t *testing.T) {
	cases := []struct {
		op     IOOp
		bs, mt int
		want   uint64
	}{
		{IORead, 512, 128 << 10, 256},
		{IOWrite, 4096, 128 << 10, 32},
		{IORead, 512, 64 << 20, MaxBlocksPerIO}, // NLB field bound
		{IORead, 0, 4096, 0},
		{IOWriteZeroes, 4096, 4096, MaxBlocksPerIO},
		{IODeallocate, 4096, 4096, 1<<32 - 1},
		{IOFlush, 4096, 4096, 1},
	}
	for _, tc := range cases {
		if got := maxBlocksPerCommand(tc.op, tc.bs, tc.mt); got != tc.want {
			t.Errorf("%v bs %d mt %d: got %d want %d", tc.op, tc.bs, tc.mt, got, tc.want)
		}
	}
}

// holdRouter keeps the commands it is given, for the test to finish.
type holdRouter struct{ got []*cmd }

func (hr *holdRouter) route(c *cmd) { hr.got = append(hr.got, c) }

// TestRequestFirstCommandInline: a request's first command is the one
// inside the Request (no pool), the others are pooled; whichever finishes
// last completes the request with the right N, and the request can be
// submitted again at once, its first command reused.
func TestRequestFirstCommandInline(t *testing.T) {
	const bs = 512
	data := make([]byte, 5*bs)
	done := make(chan *Request, 1)
	r := &Request{Op: IOWrite, Data: data, Done: done}
	errBad := &StatusError{Op: "write"}
	cases := []struct {
		name  string
		order []int // finish order of the 3 commands
		fail  int   // index of the failing command, or -1
		wantN int
	}{
		{"first finishes last", []int{1, 2, 0}, -1, len(data)},
		{"first finishes first", []int{0, 1, 2}, -1, len(data)},
		{"middle fails", []int{2, 0, 1}, 1, 2 * bs},
		{"first fails last", []int{1, 2, 0}, 0, 0},
	}
	for _, tc := range cases {
		r.pending.Store(1)
		r.bs, r.failAt, r.err = bs, -1, nil
		hr := &holdRouter{}
		r.split(7, 5, 2, hr, nil) // blocks 7-8, 9-10, 11
		r.release()
		if len(hr.got) != 3 || hr.got[0] != &r.first || hr.got[1] == &r.first || hr.got[2] == &r.first {
			t.Fatalf("%s: commands %p, first %p", tc.name, hr.got, &r.first)
		}
		if c := hr.got[0]; c.lba != 7 || c.blocks != 2 || len(c.data) != 2*bs || &c.data[0] != &data[0] {
			t.Fatalf("%s: first command %+v", tc.name, *c)
		}
		if c := hr.got[2]; c.lba != 11 || c.blocks != 1 || c.off != 4*bs {
			t.Fatalf("%s: last command %+v", tc.name, *c)
		}
		for i, k := range tc.order {
			select {
			case <-done:
				t.Fatalf("%s: completed after %d of 3 commands", tc.name, i)
			default:
			}
			var err error
			if k == tc.fail {
				err = errBad
			}
			hr.got[k].finish(err)
		}
		got := <-done
		if got.N != tc.wantN || (tc.fail < 0) != (got.Err == nil) {
			t.Fatalf("%s: N %d err %v, want N %d", tc.name, got.N, got.Err, tc.wantN)
		}
	}
}
