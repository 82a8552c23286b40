package bench

import (
	"math/bits"
	"strconv"
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

// FormatLatency prints d with three significant digits in the unit that
// suits it ("812ns", "87.3µs", "1.25ms", "2.01s"): the histogram's
// buckets are not finer than that, and full nanosecond precision only
// hides the magnitude.
func FormatLatency(d time.Duration) string {
	v := float64(d)
	unit, div := "ns", 1.0
	switch {
	case d >= time.Second:
		unit, div = "s", float64(time.Second)
	case d >= time.Millisecond:
		unit, div = "ms", float64(time.Millisecond)
	case d >= time.Microsecond:
		unit, div = "µs", float64(time.Microsecond)
	}
	x := v / div
	if x >= 999.5 && unit != "s" { // rounds to 1000: say it in the next unit
		x /= 1000
		unit = map[string]string{"ns": "µs", "µs": "ms", "ms": "s"}[unit]
	}
	switch {
	case x >= 100 || unit == "ns":
		return strconv.FormatFloat(x, 'f', 0, 64) + unit
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64) + unit
	}
	return strconv.FormatFloat(x, 'f', 2, 64) + unit
}
