package topic

// The times of a log's values: a clock reading cached per tick and shared by
// the publications of that tick, and the timer that ends each tick.

import (
	"sync"
	"sync/atomic"
	"time"
)

// now returns the time since the epoch.
func (l *logOf[T]) now() int64 { return int64(time.Since(l.epoch)) }

// stamp returns the time to give a publication: the reading of the current
// clock tick, or 0 with NoTime. The age bound is checked against it too,
// so that by the log's own times a value just published is never expired.
// (publish inlines its first step: see there.)
func (l *logCore) stamp() int64 {
	if c := l.clock.cached.Load(); c != 0 {
		return c - 1
	}
	return l.stampSlow()
}

// stampSlow is stamp without a cached reading. A log of NoTime never reads
// the clock (stamp is what reads it), so it never caches a reading either.
//
//go:noinline
func (l *logCore) stampSlow() int64 {
	if l.limit.NoTime {
		return 0
	}
	return l.clock.read()
}

// The clock's tick; how many ticks without a publication stop its timer;
// how many publications in a row may share a reading; and how late a tick
// may be before its timer is taken for dead.
const (
	clockTick      = time.Millisecond
	clockIdleTicks = 50
	clockMaxShared = 64
	clockLate      = 4 * clockTick
)

// clock is a log's cached clock reading, shared by the publications of one
// tick.
//
// Invariant: while cached holds a reading, a timer is armed that clears it
// at the end of the tick the reading was taken in. A publisher that finds
// none reads the clock and stores the reading; it then arms a timer unless
// ticking is set. A timer that stops, after clockIdleTicks ticks without a
// reading, clears ticking, then looks at cached once more and goes on if a
// reading was stored meanwhile: either the publisher's store comes before
// that look (the timer sees it), or the clearing comes before the publisher
// looks at ticking (the publisher arms one). A reading taken across the end
// of a tick (ticks changed meanwhile, say because its publisher was
// descheduled) is withdrawn at once, so that no other publication uses it.
//
// A timer armed inside a testing/synctest bubble never fires once the
// bubble has ended, and must not be touched from outside it, so a publisher
// never resets a timer: start makes a new one, which only its own function
// re-arms, and a timer whose tick is clockLate overdue, as a publisher that
// reads the clock finds, is replaced. That publisher must read the clock to
// find it: appendLocked withdraws a reading once clockMaxShared publications
// in a row have shared it, so a dead timer costs at most that many stale
// readings.
type clock struct {
	cached  atomic.Int64  // the reading (time since the epoch) plus one, or 0
	ticking atomic.Bool   // a timer is armed, or its function is running
	ticks   atomic.Uint64 // the ticks ended
	fired   atomic.Int64  // the time since the epoch of the last tick, or of the timer's arming
	mu      sync.Mutex    // taken by start and once per tick
	gen     uint64        // the generation of the current timer; guarded by mu
	timer   *time.Timer   // the current timer; guarded by mu
	idle    int           // ticks in a row without a reading; guarded by mu
	epoch   time.Time     // the log's; never changes
}

// since returns the time since the epoch.
func (c *clock) since() int64 { return int64(time.Since(c.epoch)) }

// read reads the clock for a publication that found no reading,
// and stores it for the others of the tick.
func (c *clock) read() int64 {
	g := c.ticks.Load()
	t := c.since()
	c.cached.Store(t + 1)
	if c.ticks.Load() != g {
		c.cached.CompareAndSwap(t+1, 0) // taken across a tick: see clock
	}
	// After the store: see clock.
	switch {
	case !c.ticking.Load():
		if c.ticking.CompareAndSwap(false, true) {
			c.start(t, false)
		}
	case overdue(t, c.fired.Load()):
		c.start(t, true)
	}
	return t
}

// overdue reports whether a tick due clockTick after fired is clockLate
// overdue at now, or fired is in the future (a reading of another clock,
// such as a synctest bubble's).
func overdue(now, fired int64) bool {
	return now-fired > int64(clockTick+clockLate) || fired-now > int64(clockLate)
}

// start arms a new timer, at now: the first, once ticking is set, or, with
// replace, one in place of a timer overdue (checked again under mu, so that
// publishers finding it so at once replace it once).
func (c *clock) start(now int64, replace bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if replace && !overdue(now, c.fired.Load()) {
		return
	}
	c.gen++
	g := c.gen
	c.idle = 0
	c.fired.Store(now)
	c.timer = time.AfterFunc(clockTick, func() { c.tick(g) })
}

// tick ends a tick: it forgets the cached reading, and re-arms its timer
// unless no publication read the clock for clockIdleTicks ticks, or the
// timer has been replaced (gen is its generation).
func (c *clock) tick(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.ticks.Add(1)
	if c.cached.Swap(0) != 0 {
		c.idle = 0
	} else if c.idle++; c.idle >= clockIdleTicks {
		c.ticking.Store(false)
		if c.cached.Load() == 0 || !c.ticking.CompareAndSwap(false, true) {
			return
		}
		c.idle = 0
	}
	c.fired.Store(c.since())
	c.timer.Reset(clockTick)
}

// timeOf returns the time of a value whose time since the epoch is nanos.
func (l *logOf[T]) timeOf(nanos int64) time.Time {
	if l.limit.NoTime {
		return time.Time{}
	}
	return l.wall.Add(time.Duration(nanos))
}
