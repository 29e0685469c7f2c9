package topic

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A guard lets a canceller wait until no publisher can still send on the
// channel it is about to close, without a publisher ever waiting or taking a
// lock. It is a sleepable read-copy-update scheme in the manner of SRCU:
// publishers count themselves into one of two sets of striped counters, and a
// canceller flips the current set twice, waiting each time for the set it left
// to drain.
//
// The protocol, with every atomic operation sequentially consistent:
//
//	publisher                          canceller (holds Broker.mu)
//	  e := epoch; slots[e&1][i] += 1     store the route without the subscription
//	  load the route                     for twice: e := epoch; epoch = e+1;
//	  send to what it lists                wait until slots[e&1] are all zero
//	  slots[e&1][i] -= 1                 close the channel
//
// Invariant: a publisher that loaded a route listing the subscription counted
// itself in, before that load, into a set the canceller then waits to drain.
// Either its increment precedes the canceller's scan of its set, and the scan
// waits for its decrement, or the increment follows the scan, and then so does
// its route load, which therefore sees the route stored before the scan. The
// two flips make both sets be scanned while not current, so the wait is bounded
// by the publishers already inside: new ones count into the current set.
//
// A publisher never holds the guard while it runs code of the user's (a From
// function), so a From function may cancel, subscribe and publish freely.
type guard struct {
	epoch atomic.Uint32
	sets  [2][guardStripes]guardSlot
}

// guardStripes is the number of counters in a set: enough that goroutines
// publishing in parallel rarely share one, few enough that a canceller scans
// them quickly and a broker's guard stays at 4 KiB.
const (
	guardStripeBits = 5
	guardStripes    = 1 << guardStripeBits
)

// A guardSlot is one stripe of a set, on its own cache line so that
// publishers on different stripes do not share a line.
type guardSlot struct {
	n atomic.Int64
	_ [56]byte
}

func newGuard() *guard { return new(guard) }

// enter counts the calling goroutine into the current set and returns its
// counter, to be given to exit.
func (g *guard) enter() *atomic.Int64 {
	c := &g.sets[g.epoch.Load()&1][stripe()%guardStripes].n
	c.Add(1)
	return c
}

// exit counts the goroutine out of the set it entered.
func (g *guard) exit(c *atomic.Int64) { c.Add(-1) }

// wait returns once every publisher that was inside the guard when wait was
// called has left it. Callers serialise waits (they hold Broker.mu).
func (g *guard) wait() {
	for range 2 {
		old := g.epoch.Add(1) - 1
		for i := range g.sets[old&1] {
			for spin := 0; g.sets[old&1][i].n.Load() != 0; spin++ {
				runtime.Gosched()
			}
		}
	}
}

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
