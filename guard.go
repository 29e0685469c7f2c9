package topic

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A guard lets a canceller wait until no publisher can still send on the
// channel it is about to close, without a publisher ever waiting or taking a
// lock. It is a sleepable read-copy-update scheme in the manner of SRCU:
// publishers count themselves in and out of one of two sets of counters, and
// a canceller flips the current set twice, waiting each time until the set it
// left has counted out every publisher it counted in.
//
// The protocol, with every atomic operation sequentially consistent:
//
//	publisher                          canceller (holds Broker.mu)
//	  e := epoch; in[e&1] += 1           store the route without the subscription
//	  load the route                     for twice: e := epoch; epoch = e+1;
//	  send to what it lists                wait until sum out[e&1] == sum in[e&1]
//	  out[e&1] += 1                        (the outs read before the ins)
//	                                     close the channel
//
// Invariant: a publisher that loaded a route listing the subscription counted
// itself in, before that load, into a set the canceller then waits on. Either
// its count in precedes the canceller's read of that counter, and the wait
// lasts until its count out, or it follows it, and then so does its route
// load, which therefore sees the route stored before the wait. The counters
// only grow. The outs are read before the ins, and a publisher counts out
// after it counted in, so every count out the canceller sees has its count
// in seen too: equal sums mean that every publisher counted in has counted
// out. The two flips make both sets be waited on while not current, so the
// wait is bounded by the publishers already inside: new ones count into the
// current set.
//
// The count in must be a locked instruction: it orders the route load after
// it. The count out need not be: it must only come after the sends, which is
// what a release store does. So a publisher counts in with an atomic addition
// to a counter striped by its goroutine's stack, and out into a counter of
// its P's own, pinned to that P (see procPin) for the one increment, so that
// no other goroutine writes that counter meanwhile and the increment can be a
// plain load and store (see increment): one locked instruction per
// publication instead of two. Nothing between the pin and the unpin checks
// for preemption, so no request to preempt the goroutine is lost (one seen
// while pinned is dropped, and procUnpin does not restore it). A P beyond the
// counters counts out atomically into striped ones.
//
// A publisher never holds the guard while it runs code of the user's (a From
// function), so a From function may cancel, subscribe and publish freely.
type guard struct {
	epoch atomic.Uint32
	in    [2][guardStripes]guardSlot // counted into atomically
	out   [2][guardStripes]guardSlot // counted out of atomically, by Ps without a counter in pins
	// pins are the out counters of the Ps: set s of P p at pins[p<<1|s].
	// Each is written only by a goroutine pinned to its P, read by
	// cancellers. Never changes after newGuard.
	pins []guardSlot
}

// guardStripes is the number of counters in a set: enough that goroutines
// publishing in parallel rarely share one, few enough that a canceller scans
// them quickly.
const (
	guardStripeBits = 5
	guardStripes    = 1 << guardStripeBits
)

// maxPins bounds the Ps with an out counter of their own.
const maxPins = 256

// A guardSlot is one counter, on its own cache line so that publishers on
// different counters do not share a line. It only grows.
type guardSlot struct {
	_ [0]atomic.Int64 // 8-byte aligned where a word is 4 bytes, as 64-bit atomics need
	n int64
	_ [56]byte
}

func newGuard() *guard {
	return &guard{pins: make([]guardSlot, 2*min(runtime.GOMAXPROCS(0), maxPins))}
}

// enter counts the calling goroutine into the current set and returns the
// set, to be given to exit.
func (g *guard) enter() uint32 {
	e := g.epoch.Load() & 1
	atomic.AddInt64(&g.in[e][stripe()%guardStripes].n, 1) // locked: before the route load (see guard)
	return e
}

// exit counts the goroutine out of set e, which it entered.
func (g *guard) exit(e uint32) {
	// Safety: procPin returns the id of the P the goroutine cannot leave
	// until procUnpin; only a goroutine so pinned writes that P's counters,
	// and only here, with no call (no preemption check) in between.
	if p := procPin(); p<<1 < len(g.pins) {
		increment(&g.pins[p<<1|int(e)].n)
	} else {
		atomic.AddInt64(&g.out[e][stripe()%guardStripes].n, 1)
	}
	procUnpin()
}

// wait returns once every publisher that was inside the guard when wait was
// called has left it. Callers serialise waits (they hold Broker.mu).
func (g *guard) wait() {
	for range 2 {
		old := g.epoch.Add(1) - 1
		for !g.drained(old & 1) {
			runtime.Gosched()
		}
	}
}

// drained reports whether set e has counted out every publisher it counted
// in: the outs are summed first (see guard).
func (g *guard) drained(e uint32) bool {
	var out, in int64
	for i := int(e); i < len(g.pins); i += 2 {
		out += atomic.LoadInt64(&g.pins[i].n)
	}
	for i := range g.out[e] {
		out += atomic.LoadInt64(&g.out[e][i].n)
	}
	for i := range g.in[e] {
		in += atomic.LoadInt64(&g.in[e][i].n)
	}
	return in == out
}

// procPin pins the calling goroutine to its P, which then runs nothing else
// and is not preempted, and returns the P's id, below GOMAXPROCS; procUnpin
// ends it. They are the runtime's own, kept for packages outside it (see
// go.dev/issue/67401), which sync.Pool uses too. Both are nosplit: neither
// checks for preemption.
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
	return (uintptr(unsafe.Pointer(&here)) >> 11 * golden) >> (ptrBits - guardStripeBits)
}

// golden is 2^ptrBits divided by the golden ratio, odd: Fibonacci hashing's
// multiplier, whose product's high bits are well spread.
const (
	ptrBits = 8 * unsafe.Sizeof(uintptr(0))
	golden  = 0x9E3779B97F4A7C15 >> (64 - ptrBits)
)

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}
