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
