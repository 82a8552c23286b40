package initiator

import "testing"

func TestChunkerCoversRangeInOrder(t *testing.T) {
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
		ch := newChunker(tc.lba, tc.blocks, tc.max)
		var got [][2]uint64
		for ch.more() {
			l, n, ok := ch.next()
			if !ok {
				t.Fatal("more but no next")
			}
			got = append(got, [2]uint64{l, n})
		}
		if _, _, ok := ch.next(); ok {
			t.Fatal("next after end")
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%+v: got %v", tc, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%+v: got %v", tc, got)
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
