package bench

import (
	"math/bits"
	"time"
)

// Histogram is a log-linear latency histogram: values are grouped by
// power of two and each group is split into subBuckets linear buckets, so
// the relative error of a quantile is below 1/subBuckets (3%). Recording
// is allocation-free; a Histogram is not safe for concurrent use (one per
// job, merged at the end).
type Histogram struct {
	counts [64 * subBuckets]uint64
	n      uint64
	sum    uint64
	max    uint64
}

const (
	subBits    = 5
	subBuckets = 1 << subBits
)

func bucketOf(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1))
	sub := (v >> (e - subBits)) & (subBuckets - 1)
	return (e-subBits+1)*subBuckets + int(sub)
}

// lowOf is the smallest value of bucket i.
func lowOf(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	g := i / subBuckets // group ≥ 1
	sub := uint64(i % subBuckets)
	e := g + subBits - 1
	return 1<<e | sub<<(e-subBits)
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[bucketOf(v)]++
	h.n++
	h.sum += v
	h.max = max(h.max, v)
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the average latency.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Max is the largest latency recorded.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the latency at quantile q (0 < q ≤ 1): the lower bound
// of the bucket holding the ceil(q·n)-th value, capped by Max.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(lowOf(i), h.max))
		}
	}
	return time.Duration(h.max)
}
