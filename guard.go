package topic

// The guard stays in this package, not in one of its own under internal/
// (as the ring is, in internal/ring): crossing that boundary would cost a
// call at every enter and exit. The publish path that enters and leaves the
// guard is generic, so it is compiled in the packages of the broker's
// users, which cannot import an internal package, and the compiler inlines
// a non-generic function of another package only where it has that
// package's export data: for the packages that the one it compiles
// imports (or, by chance, where an imported package's export data carries
// the body because one of that package's own inlinable functions inlined
// it). Moved to internal/guard, enter and exit were calls in every send
// function of a program that publishes (go1.27.3, by objdump), though the
// root package's own build (go build -gcflags=-m=1 .), which compiles no
// instantiation of the send functions, showed nothing amiss. The methods of
// a generic type do not have the problem: their bodies travel with the
// generic code that calls them. The sequencing point (seq.go) stays for the
// same reason, and the loss counters (loss.go) for it among others.

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// A guard lets a canceller wait until no publisher can still send on the
// channel it is about to close, without a publisher ever waiting or taking a
// lock. It is a sleepable read-copy-update scheme in the manner of SRCU, with
// a fast path of one locked instruction.
//
// A publisher takes the slot of its stripe (picked by its goroutine's
// stack, see stripe) for its section: a slot is odd while it is held, and a
// compare-and-swap from an even value takes it. It loads the route, sends to
// what it lists, and gives the slot back by making it even again:
//
//	publisher                          canceller (holds Broker.mu)
//	  n := slot; slot: n -> n+1 (CAS)    store the route without the subscription
//	  load the route                     read every slot; for each n read odd,
//	  send to what it lists                wait until that slot != n
//	  slot = n+2                         (and wait for the sets, below)
//	                                     close the channel
//
// Invariant: a publisher that loaded a route listing the subscription took
// its slot before that load, and every operation above but the give-back is
// sequentially consistent. Either its take precedes the canceller's read of
// the slot, and the canceller reads it odd, the value it took, or a later
// one if it has already left, and waits until it changes, which only the
// give-back does; or the take follows that read, and then so does its route
// load, which therefore sees the route stored before the read. A slot only
// grows, so no later holder can bring back the value the canceller waits to
// see change.
//
// The give-back need not be a locked instruction: while a slot is odd no
// compare-and-swap can take it, so its holder is its only writer, and the
// give-back must only come after the sends, which is what a release store
// does (see increment). One locked instruction per publication, and no call.
//
// A publisher whose slot is held (by a goroutine on the same stripe, or by
// itself, in a section within a section) counts itself in and out of one of
// two sets of striped counters instead, both atomically:
//
//	publisher                          canceller
//	  e := epoch; in[e&1] += 1           for twice: e := epoch; epoch = e+1;
//	  load the route                       wait until sum out[e&1] == sum in[e&1]
//	  send to what it lists                (the outs read before the ins)
//	  out[e&1] += 1
//
// A publisher that counted itself in, before its route load, into a set the
// canceller then waits on: either its count in precedes the canceller's read
// of that counter, and the wait lasts until its count out, or it follows it,
// and then so does its route load. The counters only grow. The outs are read
// before the ins, and a publisher counts out after it counted in, so every
// count out the canceller sees has its count in seen too: equal sums mean
// that every publisher counted in has counted out. The two flips make both
// sets be waited on while not current, so the wait is bounded by the
// publishers already inside: new ones count into the current set.
//
// A publisher never holds the guard while it runs code of the user's (a From
// function), so a From function may cancel, subscribe and publish freely.
type guard struct {
	// own are the slots, one per stripe: odd while held, only growing.
	own   [guardStripes]guardSlot
	epoch atomic.Uint32
	in    [2][guardStripes]guardSlot // counted into atomically, when the slot is held
	out   [2][guardStripes]guardSlot // counted out of atomically
}

// guardStripes is the number of slots, and of counters in a set: enough
// that goroutines publishing in parallel rarely share one, few enough that a
// canceller scans them quickly.
const (
	guardStripeBits = 5
	guardStripes    = 1 << guardStripeBits
)

// A guardSlot is one slot or counter, on its own cache line so that
// publishers on different stripes do not share a line. It only grows.
type guardSlot struct {
	_ [0]atomic.Int64 // 8-byte aligned where a word is 4 bytes, as 64-bit atomics need
	n int64
	_ [56]byte
}

func newGuard() *guard { return new(guard) }

// A section is what enter returns and exit takes: the index of the slot the
// section holds, or inSet plus the set it counted into.
type section uint32

const inSet section = guardStripes

// enter takes the calling goroutine's slot, or counts it into the current
// set if that slot is held, and returns which, to be given to exit.
func (g *guard) enter() section {
	i := stripe()
	s := &g.own[i].n
	// Locked: before the route load (see guard). The compare-and-swap
	// expects the slot even: it fails if the slot is held.
	if n := atomic.LoadInt64(s) &^ 1; atomic.CompareAndSwapInt64(s, n, n+1) {
		return section(i)
	}
	e := section(g.epoch.Load() & 1)
	atomic.AddInt64(&g.in[e][i].n, 1) // locked: before the route load (see guard)
	return inSet + e
}

// exit ends section c, which enter returned.
func (g *guard) exit(c section) {
	if c < inSet {
		// Safety: slot c is odd, held by this goroutine since enter: no
		// compare-and-swap can take it meanwhile, so nothing else writes
		// it, and the plain increment gives it back (see guard).
		increment(&g.own[c].n)
		return
	}
	atomic.AddInt64(&g.out[c-inSet][stripe()%guardStripes].n, 1)
}

// wait returns once every publisher that was inside the guard when wait was
// called has left it. Callers serialise waits (they hold Broker.mu).
func (g *guard) wait() {
	// Read every slot first, then wait for those held to change: a slot
	// read only once the slot before it has changed would make the wait
	// wait for sections that began after it was called.
	var held [guardStripes]int64
	for i := range g.own {
		held[i] = atomic.LoadInt64(&g.own[i].n)
	}
	for i, n := range held {
		if n&1 != 0 {
			for atomic.LoadInt64(&g.own[i].n) == n {
				runtime.Gosched()
			}
		}
	}
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
	for i := range g.out[e] {
		out += atomic.LoadInt64(&g.out[e][i].n)
	}
	for i := range g.in[e] {
		in += atomic.LoadInt64(&g.in[e][i].n)
	}
	return in == out
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
