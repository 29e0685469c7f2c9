package topic

import (
	"strconv"
	"sync/atomic"
)

// A Cause says why a subscription lost a value.
type Cause uint8

const (
	// Full: the subscription's buffer had no room, or it is unbuffered and
	// no receiver was waiting, so the new value was dropped.
	Full Cause = iota + 1
	// Evicted: the subscription's policy is DropOldest and its buffer was
	// full, so its oldest queued value was removed to make room.
	Evicted
	// Failed: a From function of the subscription panicked on the value.
	Failed
	// Errored: an at-most-once handler's function returned an error or
	// panicked, or an at-least-once handler failed on a dead letter, which
	// it does not dead-letter again.
	Errored
	// Discarded: a handler stopped with DiscardOnStop, or by a Shutdown
	// whose context ended, dropped the value it had queued or was retrying.
	Discarded
)

func (c Cause) String() string {
	switch c {
	case Full:
		return "full"
	case Evicted:
		return "evicted"
	case Failed:
		return "failed"
	case Errored:
		return "errored"
	case Discarded:
		return "discarded"
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// A Policy says what a subscription does with a value its full buffer
// cannot take. The zero Policy is DropNewest.
type Policy uint8

const (
	// DropNewest drops the value that does not fit, counted as Full.
	DropNewest Policy = iota
	// DropOldest removes the oldest queued value, counted as Evicted, and
	// queues the new one. The values kept stay in publication order.
	DropOldest
)

func (p Policy) String() string {
	switch p {
	case DropNewest:
		return "drop-newest"
	case DropOldest:
		return "drop-oldest"
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// A Loss describes one value a subscription of type T lost.
type Loss[T any] struct {
	Cause Cause
	// Value is the value lost: the new value for Full, the evicted one for
	// Evicted. For Failed it is the zero value: nothing of type T was made.
	Value T
	// Source is, for Failed, the published value given to the From
	// function, and Panic what the function panicked with.
	Source any
	Panic  any
	// Err is, for Errored and Discarded, the error of the handler's last
	// call, if any.
	Err error
}

// Lost counts the values a subscription lost, by cause.
type Lost struct {
	Full, Evicted, Failed uint64
	Errored, Discarded    uint64 // handlers only
}

// Total is the number of values lost, whatever the cause.
func (l Lost) Total() uint64 { return l.Full + l.Evicted + l.Failed + l.Errored + l.Discarded }

// A lossCounter counts one subscription's losses with one atomic addition
// per value lost and none per value delivered. It starts as three plain
// counters; the first time two publishers count at the same moment (a
// compare-and-swap fails) it spreads further counts over stripes, chosen
// like the guard's, so that publishers of a saturated subscription in
// parallel do not all write one cache line.
type lossCounter struct {
	base    [3]atomic.Uint64
	stripes atomic.Pointer[[guardStripes]lossStripe] // set once, when contended
}

type lossStripe struct {
	n [3]atomic.Uint64
	_ [40]byte
}

func (c *lossCounter) add(k Cause) {
	if c.stripes.Load() == nil {
		n := &c.base[k-1]
		if old := n.Load(); n.CompareAndSwap(old, old+1) {
			return
		}
	}
	c.addStriped(k)
}

// addStriped counts on the stripes, spreading the counts over them from
// now on if it is the first to find a contention.
func (c *lossCounter) addStriped(k Cause) {
	s := c.stripes.Load()
	if s == nil {
		c.stripes.CompareAndSwap(nil, new([guardStripes]lossStripe))
		s = c.stripes.Load()
	}
	s[stripe()%guardStripes].n[k-1].Add(1)
}

// load returns the counts. Counts added concurrently may or may not be in
// it; once the additions have returned, they are.
func (c *lossCounter) load() Lost {
	var n [3]uint64
	for i := range n {
		n[i] = c.base[i].Load()
	}
	if s := c.stripes.Load(); s != nil {
		for j := range s {
			for i := range n {
				n[i] += s[j].n[i].Load()
			}
		}
	}
	return Lost{Full: n[0], Evicted: n[1], Failed: n[2]}
}
