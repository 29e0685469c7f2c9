package topic

import "sync/atomic"

// A tally counts events of one kind, the values sent to one subscription
// or the publications of one type, at the cost of a plain addition where
// the counting goroutine holds a slot of the broker's guard (a section it
// entered anyway to send), and an atomic one elsewhere.
//
// Invariant: own[i] is written only by the goroutine holding the guard's
// slot i (see guard), so its read-modify-write loses no count. A holder
// takes the slot by a compare-and-swap and gives it back by a release store
// after its count (increment), so the next holder reads the count its
// predecessor left. Readers load each word atomically: a plain aligned
// store of a word is atomic on every architecture Go supports, and bump is
// an atomic addition where the memory model requires one (see
// guard_increment.go). What is counted outside a held slot (a section
// counted into the guard's sets, or no section) goes to shared, a spread
// counter.
type tally struct {
	own    [guardStripes]uint64
	shared spread
}

// addIn counts one event from inside section c of the guard.
func (t *tally) addIn(c section) {
	if c < inSet {
		bump(&t.own[c], 1)
		return
	}
	t.shared.add(1)
}

// add counts n events from outside the guard.
func (t *tally) add(n uint64) { t.shared.add(n) }

// load returns the count. Events counted concurrently may or may not be in
// it; once their counting has returned, they are.
func (t *tally) load() uint64 {
	n := t.shared.load()
	for i := range t.own {
		n += atomic.LoadUint64(&t.own[i])
	}
	return n
}

// A spread counts with one compare-and-swap while uncontended; the first
// time two goroutines count at the same moment (the compare-and-swap
// fails), it spreads further counts over stripes chosen like the guard's,
// each on a cache line of its own, so that counters in parallel do not all
// write one line (as lossCounter does).
type spread struct {
	base    atomic.Uint64
	stripes atomic.Pointer[[guardStripes]guardSlot] // set once, when contended
}

// add counts n.
func (s *spread) add(n uint64) {
	if s.stripes.Load() == nil {
		if old := s.base.Load(); s.base.CompareAndSwap(old, old+n) {
			return
		}
		s.stripes.CompareAndSwap(nil, new([guardStripes]guardSlot))
	}
	atomic.AddInt64(&s.stripes.Load()[stripe()%guardStripes].n, int64(n))
}

// load returns the count, as tally.load does.
func (s *spread) load() uint64 {
	n := s.base.Load()
	if st := s.stripes.Load(); st != nil {
		for i := range st {
			n += uint64(atomic.LoadInt64(&st[i].n))
		}
	}
	return n
}
