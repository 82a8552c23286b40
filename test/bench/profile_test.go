package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// TestProfileBreakdown: every sample of a real CPU profile lands in
// exactly one category, and samples of this test's own code (no category
// matches it) land in the last, "other".
func TestProfileBreakdown(t *testing.T) {
	if testing.Short() {
		t.Skip("burns CPU for a profile")
	}
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the profiler has taken samples (it ticks at 100 Hz
	// of CPU time, so this ends after about 0.3 s of CPU even under load).
	x := 1.0
	for i := 0; i < 100_000_000 && x > 0; i++ {
		x = math.Sqrt(x + float64(i&7))
	}
	pprof.StopCPUProfile()
	f.Close()
	cats, total, err := profileBreakdown(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, c := range cats {
		sum += c
	}
	if math.Abs(sum-total) > 1e-9 || total <= 0 {
		t.Fatalf("categories sum to %v s, total %v s", sum, total)
	}
	if other := cats[len(cats)-1]; other < total/2 {
		t.Fatalf("this test's own samples: %v s of %v s in other; categories %v", other, total, cats)
	}
}
