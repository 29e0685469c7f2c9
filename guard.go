package topic

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A guard lets a canceller wait until no publisher can still send on the
// channel it is about to close, without a publisher ever waiting or taking a
// lock. It is a sleepable read-copy-update scheme in the manner of SRCU:
// publishers count themselves into one of two sets of counters, and a
// canceller flips the current set twice, waiting each time for the set it left
// to drain.
//
// The protocol, with every atomic operation sequentially consistent:
//
//	publisher                          canceller (holds Broker.mu)
//	  e := epoch; n[e&1] += 1            store the route without the subscription
//	  load the route                     for twice: e := epoch; epoch = e+1;
//	  send to what it lists                wait until the counters n[e&1] are all zero
//	  n[e&1] -= 1                        close the channel
//
// Invariant: a publisher that loaded a route listing the subscription counted
// itself in, before that load, into a set the canceller then waits to drain.
// Either its increment precedes the canceller's scan of its set, and the scan
// waits for its decrement, or the increment follows the scan, and then so does
// its route load, which therefore sees the route stored before the scan. The
// two flips make both sets be scanned while not current, so the wait is bounded
// by the publishers already inside: new ones count into the current set.
//
// The increment must be a locked instruction (it orders the route load after
// it), the decrement need not be: it must only come after the sends, which is
// what a release store does. A publisher whose section is short counts itself
// into a counter of its P's own, pinned to that P (see procPin) from enter to
// exit, so that no other goroutine writes that counter meanwhile and exit can
// be a plain store (see decrement): one locked instruction per publication
// instead of two. Other sections (long fan-outs, which must not be kept from
// preemption, or a P beyond the counters) count into counters striped by the
// goroutine's stack, with an atomic addition each way. The canceller waits
// for both kinds.
//
// A publisher never holds the guard while it runs code of the user's (a From
// function), so a From function may cancel, subscribe and publish freely.
type guard struct {
	epoch atomic.Uint32
	sets  [2][guardStripes]guardSlot
	// pins are the counters of pinned sections: set s of P p at
	// pins[p<<1|s]. Each is written only by the goroutine pinned to its P,
	// read by cancellers. Never changes after newGuard.
	pins []guardSlot
}

// guardStripes is the number of counters in a set: enough that goroutines
// publishing in parallel rarely share one, few enough that a canceller scans
// them quickly and a broker's guard stays at 4 KiB.
const (
	guardStripeBits = 5
	guardStripes    = 1 << guardStripeBits
)

// pinnedMax bounds the sends of a pinned section: a fan-out to more enters
// the striped counters, so that a publication keeps its goroutine from
// preemption (and a stop of the world waiting) for a few microseconds at
// most. maxPins bounds the Ps with a counter of their own.
const (
	pinnedMax = 64
	maxPins   = 256
)

// A guardSlot is one counter, on its own cache line so that publishers on
// different counters do not share a line. It is written with atomic
// additions, or, pinned, an atomic addition in and a release store out.
type guardSlot struct {
	n int64
	_ [56]byte
}

// A section is a publisher's place in the guard, from enter to exit.
type section struct {
	n      *int64 // the counter it counted itself into
	pinned bool   // n is its P's own, and the goroutine is pinned to it
}

func newGuard() *guard {
	return &guard{pins: make([]guardSlot, 2*min(runtime.GOMAXPROCS(0), maxPins))}
}

// enter counts the calling goroutine into the current set, for a section
// that sends to at most sends channels, and returns its place, to be given
// to exit. Between the two the goroutine may be pinned to its P: it must
// not block, nor run code of the user's, nor allocate (an allocation there
// never assists the collector).
func (g *guard) enter(sends int) section {
	if sends <= pinnedMax {
		// Safety: procPin returns the id of the P the goroutine now cannot
		// leave; only this goroutine writes that P's counters until exit.
		if p := procPin(); p<<1 < len(g.pins) {
			c := &g.pins[p<<1|int(g.epoch.Load()&1)].n
			atomic.AddInt64(c, 1) // locked: before the route load (see guard)
			return section{c, true}
		}
		procUnpin()
	}
	c := &g.sets[g.epoch.Load()&1][stripe()%guardStripes].n
	atomic.AddInt64(c, 1)
	return section{c, false}
}

// exit counts the goroutine out of the set it entered.
func (s section) exit() {
	if s.pinned {
		// The counter's only writer is this goroutine, pinned: a release
		// store of one less, after the sends, is its decrement.
		decrement(s.n)
		procUnpin()
	} else {
		atomic.AddInt64(s.n, -1)
	}
}

// wait returns once every publisher that was inside the guard when wait was
// called has left it. Callers serialise waits (they hold Broker.mu).
func (g *guard) wait() {
	for range 2 {
		old := g.epoch.Add(1) - 1
		for i := range g.sets[old&1] {
			for atomic.LoadInt64(&g.sets[old&1][i].n) != 0 {
				runtime.Gosched()
			}
		}
		for i := int(old & 1); i < len(g.pins); i += 2 {
			for atomic.LoadInt64(&g.pins[i].n) != 0 {
				runtime.Gosched()
			}
		}
	}
}

// procPin pins the calling goroutine to its P, which then runs nothing else
// and is not preempted, and returns the P's id, below GOMAXPROCS; procUnpin
// ends it. They are the runtime's own, kept for packages outside it (see
// go.dev/issue/67401), which sync.Pool uses too.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// stripe picks a counter for the calling goroutine from the address of its
// stack, so that goroutines publishing in parallel tend to use different
// stripes and one goroutine keeps using the same, cache-resident one. It needs
// only to be cheap and well spread: enter returns the counter it chose.
//
// The address is taken in units of 2 KiB, the smallest goroutine stack:
// goroutines started together get neighbouring stacks, so a coarser unit
// would put them on one stripe (with 8 KiB units, two parallel publishers of a
// saturated subscription took 28 ns per publication instead of 11).
func stripe() uintptr {
	var here byte
	return (uintptr(unsafe.Pointer(&here)) >> 11 * 0x9E3779B97F4A7C15) >> (64 - guardStripeBits)
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
