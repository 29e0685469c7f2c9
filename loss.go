package topic

// The loss counter (lossCounter) stays in this package, not in one of its
// own under internal/: it is indexed by the exported Cause and returns the
// exported Lost, which a package under internal/ cannot name (the root
// package imports it), so that it would need those types to move there and
// come back as aliases in the public API, or a translation on the drop
// path; and its counts on that path (tryAdd), called from generic
// code, would be calls there rather than inlined, as the guard's would be
// (see the top of guard.go).

import (
	"fmt"
	"runtime"
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
	// Discarded: a handler stopped with DiscardOnStop (by its stop or its
	// Context), or by a Shutdown whose context ended, dropped the value it
	// had queued or was retrying; or one whose goroutine a function of the
	// user's ended (runtime.Goexit) dropped what it had queued.
	Discarded
	// Closed: the value was published after Broker.Shutdown had closed the
	// subscription, so it could not be delivered.
	Closed
	// Skipped: a follower (or a replay) of a retained type came to read the
	// value after retention had trimmed it.
	Skipped
)

// causeNames are the names of the causes, from Full on.
var causeNames = [...]string{"full", "evicted", "failed", "errored", "discarded", "closed", "skipped"}

func (c Cause) String() string {
	if c >= Full && int(c) <= len(causeNames) {
		return causeNames[c-1]
	}
	return "Cause(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText returns the name of c, as String does.
func (c Cause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText sets c to the cause named by text, as String prints it.
func (c *Cause) UnmarshalText(text []byte) error {
	for i, n := range causeNames {
		if string(text) == n {
			*c = Cause(i + 1)
			return nil
		}
	}
	return fmt.Errorf("topic: unknown cause %q", text)
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

var policyNames = [...]string{"drop-newest", "drop-oldest"}

func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "Policy(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText returns the name of p, as String does.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText sets p to the policy named by text, as String prints it.
func (p *Policy) UnmarshalText(text []byte) error {
	for i, n := range policyNames {
		if string(text) == n {
			*p = Policy(i)
			return nil
		}
	}
	return fmt.Errorf("topic: unknown policy %q", text)
}

// A Loss describes one value a subscription of type T lost.
type Loss[T any] struct {
	Cause Cause
	// Value is the value lost: the new value for Full, the evicted one for
	// Evicted. For Failed it is the zero value: nothing of type T was made.
	Value T
	// Source is, for Failed, the published value given to the From
	// function, and Panic what the function panicked with. For Closed, if
	// the subscription was closed before its From function was called, it
	// is the value the function would have been given (it is not called),
	// and Value the zero value; if it was closed while the function ran
	// (Shutdown does not wait for From functions), Value is what the
	// function returned and Source is nil.
	Source any
	Panic  any
	// Err is, for Errored and Discarded, the error of the handler's last
	// call, if any.
	Err error
	// Offset and Count are, for Skipped, the offset of the first value
	// missed and how many were missed, with consecutive offsets; Value is
	// then the zero value.
	Offset, Count uint64
}

// Lost counts the values a subscription lost, by cause.
type Lost struct {
	Full      uint64 `json:"full"`
	Evicted   uint64 `json:"evicted"`
	Failed    uint64 `json:"failed"`
	Errored   uint64 `json:"errored"`   // handlers only
	Discarded uint64 `json:"discarded"` // handlers only
	Closed    uint64 `json:"closed"`
	Skipped   uint64 `json:"skipped"` // followers only
}

// Total is the number of values lost, whatever the cause.
func (l Lost) Total() uint64 {
	return l.Full + l.Evicted + l.Failed + l.Errored + l.Discarded + l.Closed + l.Skipped
}

// Of returns the count of cause c.
func (l Lost) Of(c Cause) uint64 {
	switch c {
	case Full:
		return l.Full
	case Evicted:
		return l.Evicted
	case Failed:
		return l.Failed
	case Errored:
		return l.Errored
	case Discarded:
		return l.Discarded
	case Closed:
		return l.Closed
	case Skipped:
		return l.Skipped
	}
	return 0
}

// A lossCounter counts one subscription's losses with one atomic addition
// per value lost and none per value delivered. It starts as plain counters;
// the first time two publishers count at the same moment (a
// compare-and-swap fails) it spreads further counts over stripes, chosen
// like the guard's, so that publishers of a saturated subscription in
// parallel do not all write one cache line. A handler counts its own
// causes, Errored and Discarded, apart.
//
// A publication whose subscriptions' buffers are all full counts its drops
// without entering the guard, so it may count one after the subscription's
// cancel has returned. The subscription's close freezes its Full count
// (freezeFull) so that its counts are final from then on: such a drop is
// then one of a publication that came after the cancel, which is not
// counted. After Shutdown's close, which counts every later publication
// as Closed, it is counted as Closed (see load).
type lossCounter struct {
	base    [lossSlots]atomic.Uint64
	stripes atomic.Pointer[[guardStripes]lossStripe] // set once, when contended
	// full is zero until the close of the subscription freezes its Full
	// count, frozeNow while it is being frozen, and then the frozen count
	// plus one, shifted left by one, with fullSealed set if the close was
	// Shutdown's (see freezeFull).
	full atomic.Uint64
}

// frozeNow marks a Full count being frozen (see freezeFull); fullSealed, in
// a frozen count, a close by Shutdown. (A frozen count is never frozeNow:
// that would take 2^63 drops.)
const (
	frozeNow   = ^uint64(0)
	fullSealed = 1
)

// The causes a lossCounter counts, by slot. fullAlone is Full counted by
// the drop path of a route of one plain subscription, which counts nothing
// else: it is also a publication of the route's type, which Topics counts
// from it (see Broker.Topics), so that the drop path makes one count, not
// two. It is never a Loss's Cause.
const (
	lossSlots = 6
	fullAlone = Skipped + 1
)

var lossSlot = [...]uint8{Full: fullSlot, Evicted: 1, Failed: 2, Closed: 3, Skipped: 4, fullAlone: aloneSlot}

type lossStripe struct {
	n [lossSlots]atomic.Uint64
	_ [64 - 8*lossSlots]byte
}

// add counts one loss of cause k, which must not be Errored or Discarded.
// Uncontended, it is one compare-and-swap. (It is too long for Go 1.27 to
// inline: 108 against the budget of 80, in go build -gcflags=-m=2.)
func (c *lossCounter) add(k Cause) {
	if c.stripes.Load() == nil {
		x := &c.base[lossSlot[k]]
		if old := x.Load(); x.CompareAndSwap(old, old+1) {
			return
		}
	}
	c.addStriped(k)
}

// addFull is add(Full), without the load of the cause's slot: the drop
// path's count.
func (c *lossCounter) addFull() {
	if !c.tryAdd(fullSlot) {
		c.addStriped(Full)
	}
}

// The slots of Full and fullAlone (lossSlot's), for tryAdd's callers.
const (
	fullSlot  = 0
	aloneSlot = 5
)

// tryAdd counts one loss in slot i (fullSlot or aloneSlot) with one
// compare-and-swap, unless the counts are striped or the compare-and-swap
// fails (a contention), and reports whether it did. It is inlined.
func (c *lossCounter) tryAdd(i int) bool {
	if c.stripes.Load() != nil {
		return false
	}
	x := &c.base[i]
	old := x.Load()
	return x.CompareAndSwap(old, old+1)
}

// alone returns the count of fullAlone, whether or not the Full count is
// frozen.
func (c *lossCounter) alone() uint64 {
	n := c.base[aloneSlot].Load()
	if s := c.stripes.Load(); s != nil {
		for j := range s {
			n += s[j].n[aloneSlot].Load()
		}
	}
	return n
}

// addN counts n losses of cause k at once, as add does (for a follower's
// skipped runs).
func (c *lossCounter) addN(k Cause, n uint64) {
	if c.stripes.Load() == nil {
		x := &c.base[lossSlot[k]]
		if old := x.Load(); x.CompareAndSwap(old, old+n) {
			return
		}
	}
	c.stripes.CompareAndSwap(nil, new([guardStripes]lossStripe))
	c.stripes.Load()[stripe()%guardStripes].n[lossSlot[k]].Add(n)
}

// addStriped counts on the stripes, spreading the counts over them from
// now on if it is the first to find a contention.
func (c *lossCounter) addStriped(k Cause) {
	s := c.stripes.Load()
	if s == nil {
		c.stripes.CompareAndSwap(nil, new([guardStripes]lossStripe))
		s = c.stripes.Load()
	}
	s[stripe()%guardStripes].n[lossSlot[k]].Add(1)
}

// load returns the counts. Counts added concurrently may or may not be in
// it; once the additions have returned, they are. Full never reads less than
// it read before, though a freeze ignores later counts (see freezeFull).
func (c *lossCounter) load() Lost {
	for {
		l := c.sum()
		switch f := c.full.Load(); f {
		case 0:
			return l
		case frozeNow:
			runtime.Gosched() // a close is freezing it: a moment
		default:
			frozen := f>>1 - 1
			if f&fullSealed != 0 && l.Full > frozen {
				// Drops counted past the freeze: publications that found
				// the buffer full before Shutdown closed it and counted
				// after. Shutdown ended them: Closed, as it counts every
				// publication after it. (l.Full may be less than frozen,
				// summed before the freeze's sum: none then.)
				l.Closed += l.Full - frozen
			}
			l.Full = frozen
			return l
		}
	}
}

// freezeFull makes the Full count what it is now for good: later drops
// counted without the guard are not loaded as Full (see lossCounter); if
// sealed, the close is Shutdown's, and they are loaded as Closed. It marks
// the count as being frozen before it sums it, and a load that finds the
// mark after its own sum waits for the frozen count: so a load that returns
// a count it summed summed before the mark, and the frozen count, summed
// after, is not less (the counters only grow). Closed does not go down
// either: what load adds to it grows with the sum.
//
// It returns the fullAlone count it froze with the Full count.
func (c *lossCounter) freezeFull(sealed bool) (alone uint64) {
	c.full.Store(frozeNow)
	l, alone := c.sumAlone()
	f := (l.Full + 1) << 1
	if sealed {
		f |= fullSealed
	}
	c.full.Store(f)
	return alone
}

// sum returns the counts as the counters hold them.
func (c *lossCounter) sum() Lost {
	l, _ := c.sumAlone()
	return l
}

// sumAlone is sum, which also returns the fullAlone count in its Full.
func (c *lossCounter) sumAlone() (Lost, uint64) {
	var n [lossSlots]uint64
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
	return Lost{Full: n[fullSlot] + n[aloneSlot], Evicted: n[1], Failed: n[2], Closed: n[3], Skipped: n[4]}, n[aloneSlot]
}
