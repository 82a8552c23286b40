package bench

import (
	"testing"
	"time"
)

func TestHistogramBucketsMonotonic(t *testing.T) {
	prev := -1
	for v := uint64(0); v < 1<<20; v += 7 {
		b := bucketOf(v)
		if b < prev {
			t.Fatalf("bucketOf(%d)=%d < previous %d", v, b, prev)
		}
		if lo := lowOf(b); lo > v {
			t.Fatalf("lowOf(bucketOf(%d))=%d > v", v, lo)
		}
		prev = b
	}
	if b := bucketOf(^uint64(0)); b >= len(Histogram{}.counts) {
		t.Fatalf("max value bucket %d out of range", b)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	check := func(q float64, want time.Duration) {
		t.Helper()
		got := h.Quantile(q)
		// log-linear with 32 sub-buckets: within 1/32 below the true value.
		if got > want || float64(got) < float64(want)*(1-1.0/subBuckets) {
			t.Errorf("Quantile(%v)=%v, want ≈%v", q, got, want)
		}
	}
	check(0.5, 500*time.Microsecond)
	check(0.99, 990*time.Microsecond)
	check(0.999, 999*time.Microsecond)
	if h.Max() != 1000*time.Microsecond {
		t.Errorf("Max=%v", h.Max())
	}
	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 2000 || m.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merge: count %d p50 %v vs %v", m.Count(), m.Quantile(0.5), h.Quantile(0.5))
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i & 0xfffff))
	}
}
