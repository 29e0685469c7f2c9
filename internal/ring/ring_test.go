package ring

// Tests of the ring alone: its shape, and a chunk's readers count. Every
// value is its offset. The tests of a log's writer on the ring
// (appendLocked, trimLocked) are the broker's, in the root package's
// ring_test.go.

import (
	"math"
	"testing"
)

// TestRingChunks checks the ring's shape: chunks of a power of two up to 64
// values, at most an eighth of its capacity, and a spare chunk.
func TestRingChunks(t *testing.T) {
	for _, tc := range []struct{ cap, chunk int }{
		{1, 1}, {8, 1}, {15, 1}, {16, 2}, {100, 8}, {511, 32}, {512, 64}, {1000, 64}, {1 << 16, 64},
	} {
		r := New[int](tc.cap)
		if got := int(r.last + 1); got != tc.chunk {
			t.Errorf("cap %d: chunk %d, want %d", tc.cap, got, tc.chunk)
		}
		if got := len(r.cells); got != tc.cap+tc.chunk {
			t.Errorf("cap %d: %d slots, want %d", tc.cap, got, tc.cap+tc.chunk)
		}
		if got, want := len(r.chunks), (tc.cap+2*tc.chunk-1)/tc.chunk; got != want {
			t.Errorf("cap %d: %d chunks, want %d", tc.cap, got, want)
		}
	}
}

// A chunk's readers count saturates at its bits without spilling
// into its offset: the next reader waits, then gets in once one leaves.
func TestRingReadersCountSaturatesWithoutSpilling(t *testing.T) {
	r := New[uint64](100)
	wr := newTrackingWriter(r, 0)
	for range 100 {
		wr.write()
	}
	const o = 42
	w := &r.chunks[r.Index(o)>>r.shift].word
	before := w.Load()
	for range slotReaders {
		if _, _, st := r.Pin(o); st != OK {
			t.Fatalf("pin: %d", st)
		}
	}
	if got := w.Load(); got>>slotShift != before>>slotShift || got&slotReaders != slotReaders {
		t.Fatalf("word %#x after %d pins, from %#x", got, slotReaders, before)
	}
	got := make(chan uint64)
	go func() {
		v, _, st := r.Read(o)
		if st != OK {
			v = math.MaxUint64
		}
		got <- v
	}()
	r.Unpin(r.Index(o))
	if v := <-got; v != o {
		t.Fatalf("the reader past saturation read %d", v)
	}
	for range slotReaders - 1 {
		r.Unpin(r.Index(o))
	}
	if got := w.Load(); got != before {
		t.Fatalf("word %#x after unpins, want %#x", got, before)
	}
	// What it keeps still reads back whole, and no chunk counts a reader.
	checkKept(t, "after saturation", r, 0, 99, true)
	if n := r.Readers(); n != 0 {
		t.Fatalf("the chunks count %d readers after the unpins", n)
	}
}
