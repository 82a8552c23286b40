package blockdev

import (
	"math"
	"testing"
)

func TestValidBlockSize(t *testing.T) {
	for n, want := range map[int]bool{
		0: false, -512: false, 256: false, 511: false, 512: true, 1024: true,
		4096: true, 4097: false, 6144: false, 65536: true, 131072: false,
	} {
		if got := ValidBlockSize(n); got != want {
			t.Errorf("ValidBlockSize(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestRangeOK(t *testing.T) {
	cases := []struct {
		lba, n, blocks uint64
		want           bool
	}{
		{0, 0, 0, true},
		{0, 1, 0, false},
		{0, 10, 10, true},
		{9, 1, 10, true},
		{10, 0, 10, true},
		{10, 1, 10, false},
		{11, 0, 10, false},
		{9, 2, 10, false},
		{1, math.MaxUint64, 10, false},
		{math.MaxUint64, 1, math.MaxUint64, false},
		{math.MaxUint64 - 1, 1, math.MaxUint64, true},
		{2, math.MaxUint64 - 1, math.MaxUint64, false},
	}
	for _, c := range cases {
		if got := RangeOK(c.lba, c.n, c.blocks); got != c.want {
			t.Errorf("RangeOK(%d, %d, %d) = %v, want %v", c.lba, c.n, c.blocks, got, c.want)
		}
	}
}
