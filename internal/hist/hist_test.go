package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// exact is the ceil(q*n)-th smallest of sorted, as Quantile defines it.
func exact(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(min(max(q, 0), 1)*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

// Every quantile of a recorded set is at or above the exact one and
// within the bucket's relative error of it, over values from a
// nanosecond to an hour, on several distributions.
func TestQuantilesAreWithinTheRelativeError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() time.Duration{
		"uniform small":  func() time.Duration { return time.Duration(r.IntN(300)) },
		"uniform wide":   func() time.Duration { return time.Duration(r.Int64N(int64(time.Hour))) },
		"log-uniform":    func() time.Duration { return time.Duration(math.Exp(r.Float64() * math.Log(float64(time.Hour)))) },
		"long tail":      func() time.Duration { return time.Duration(1000 / (r.Float64() + 1e-9)) },
		"one value":      func() time.Duration { return 12345 },
		"powers of two":  func() time.Duration { return time.Duration(1) << r.IntN(62) },
		"below a power":  func() time.Duration { return time.Duration(1)<<(8+r.IntN(50)) - 1 },
		"max int64 tail": func() time.Duration { return time.Duration(math.MaxInt64 - r.Int64N(1000)) },
	}
	qs := []float64{0, 0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}
	for name, draw := range dists {
		var h Histogram
		var all []time.Duration
		for range 20000 {
			d := draw()
			h.Record(d)
			all = append(all, d)
		}
		slices.Sort(all)
		if h.Count() != uint64(len(all)) || h.Max() != all[len(all)-1] {
			t.Errorf("%s: count %d max %v, want %d %v", name, h.Count(), h.Max(), len(all), all[len(all)-1])
		}
		for _, q := range qs {
			got, want := h.Quantile(q), exact(all, q)
			if got < want || float64(got-want) > float64(want)/subCount {
				t.Errorf("%s: Quantile(%v) = %v, exact %v: outside [exact, exact*(1+1/%d)]", name, q, got, want, subCount)
			}
		}
	}
}

// Values up to 2^(subBits+1) are kept exactly, and every bucket's upper
// bound is the value just below the next bucket's first.
func TestBucketsTileTheValues(t *testing.T) {
	for v := uint64(0); v < 2*subCount; v++ {
		if upper(index(v)) != v {
			t.Fatalf("small value %d is kept as %d", v, upper(index(v)))
		}
	}
	for i := 0; i < numBuckets-1; i++ {
		u := upper(i)
		if index(u) != i || index(u+1) != i+1 {
			t.Fatalf("bucket %d ends at %d: index(%d) = %d, index(%d) = %d", i, u, u, index(u), u+1, index(u+1))
		}
	}
	if index(math.MaxUint64) != numBuckets-1 {
		t.Fatalf("the largest value is in bucket %d of %d", index(math.MaxUint64), numBuckets)
	}
}

func TestEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Count() != 0 {
		t.Fatal("an empty histogram reports a value")
	}
	h.Record(-5)
	if h.Count() != 1 || h.Quantile(1) != 0 {
		t.Fatalf("a negative duration counts as 0: count %d, max %v", h.Count(), h.Quantile(1))
	}
	h.Record(1000)
	if h.Quantile(-1) != 0 || h.Quantile(2) != 1000 {
		t.Fatalf("q outside [0,1]: %v %v", h.Quantile(-1), h.Quantile(2))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Quantile(NaN) did not panic")
		}
	}()
	h.Quantile(math.NaN())
}

// Merging histograms is recording every value in one.
func TestMergeIsRecordingInOne(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var a, b, all Histogram
	for i := range 5000 {
		d := time.Duration(r.Int64N(int64(time.Second)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	if a != all {
		t.Fatal("a merge differs from recording every value in one histogram")
	}
	a.Reset()
	if a != (Histogram{}) {
		t.Fatal("Reset left counts")
	}
}

func TestRecordAllocatesNothing(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(100, func() { h.Record(time.Microsecond) }); n != 0 {
		t.Fatalf("Record allocates %v", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	for i := range b.N {
		h.Record(time.Duration(i))
	}
}
