// Package hist is a histogram of durations for latency figures: a fixed
// array of log-linear buckets, as an HDR histogram keeps them, so that a
// recording costs a few instructions and allocates nothing, and any
// quantile is read back within a known relative error.
//
// A value v is kept in the bucket of its top subBits+1 significant bits:
// values below 2^(subBits+1) exactly, each larger one within 1/2^subBits
// of itself (0.8 % with subBits = 7). Quantile returns the largest value
// its bucket can hold, so a reported quantile is never below the true
// one and at most that error above it.
package hist

import (
	"math"
	"math/bits"
	"time"
)

const (
	subBits    = 7
	subCount   = 1 << subBits // buckets per power of two
	groups     = 64 - subBits // powers of two above the exact range
	numBuckets = (groups + 1) * subCount
)

// A Histogram counts durations. Its zero value is empty and ready. It is
// not safe for concurrent use: keep one per goroutine and Merge them.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	max    uint64
}

// index is the bucket of v.
func index(v uint64) int {
	if v < 2*subCount {
		return int(v) // group 0 and 1: exact
	}
	e := bits.Len64(v) - 1 - subBits // v >> e is in [subCount, 2*subCount)
	return e*subCount + int(v>>e)
}

// upper is the largest value bucket i holds.
func upper(i int) uint64 {
	if i < 2*subCount {
		return uint64(i)
	}
	e := i/subCount - 1
	sub := uint64(i%subCount + subCount)
	return (sub+1)<<e - 1
}

// Record counts d; a negative d counts as 0.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	h.counts[index(v)]++
	h.n++
	h.max = max(h.max, v)
}

// Count is the number of durations recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest duration recorded, exactly; 0 if none.
func (h *Histogram) Max() time.Duration { return toDuration(h.max) }

// Quantile is the duration at or below which a fraction q of those
// recorded lie (q in [0, 1]; q <= 0 is the smallest, q >= 1 the largest):
// the upper bound of the bucket of the ceil(q*Count())-th smallest, never
// above Max. It is 0 if nothing was recorded; a NaN q panics.
func (h *Histogram) Quantile(q float64) time.Duration {
	if math.IsNaN(q) {
		panic("hist: Quantile of NaN")
	}
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return toDuration(min(upper(i), h.max))
		}
	}
	return toDuration(h.max) // not reached: seen ends at n
}

// Merge adds the durations recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Reset empties h.
func (h *Histogram) Reset() { *h = Histogram{} }

func toDuration(v uint64) time.Duration {
	return time.Duration(min(v, math.MaxInt64))
}
