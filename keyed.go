package topic

import (
	"reflect"
	"slices"
	"sort"
)

// RetainLatest declares T a retained type whose log keeps the latest value of
// each key, key(v) giving a value's key: a compacted log, like a Kafka
// compacted topic or a JetStream key-value bucket. A subscription that
// replays it, or a follower that starts at its earliest, receives the current
// value of every key ("the latest price of every SKU"), not the last n
// values.
//
// Publications get offsets and times as in any retained type, and are
// delivered live alike. What the log keeps differs: a value is dropped as
// soon as a later value of its key is published, and r.Count bounds the
// keys, not the values: a new key beyond it drops the key whose latest value
// is the oldest. If r.Age is positive, values older than Age are dropped too.
// Offsets stay those of the publications, so the values kept have gaps
// between their offsets. A replay, a Read and a follower read the values
// kept from their position on, in offset order; a value dropped before they
// reached it, replaced or with its key, is not read and not counted as
// Skipped: the log keeps state, not history. Memory is proportional to the
// keys kept.
//
// The publishing goroutine calls key once per publication, before the value
// gets its offset, with no lock held: a key function may publish, and one
// that panics panics the Publish that called it, the value neither kept nor
// delivered, and the log goes on.
//
// RetainLatest panics like Retain, and if key is nil. A follower, Read and a
// replay of such a log take its lock (it is not a ring), for as long as they
// copy values out. Declaring T retained again, either way, with the same
// bound does nothing; with another, it panics.
func (b *Broker) RetainLatest[T any, K comparable](key func(T) K, r Retention) {
	if key == nil {
		panic("topic: RetainLatest key function is nil")
	}
	b.retain(r, func(l *logOf[T]) { l.keyed = newKeyed(key, r.Count) }, reflect.TypeFor[K]())
}

// A keyedLog keeps the latest value of each key of a log. Its methods but
// lockFor are called with the log's sequencing point held.
type keyedLog[T any] interface {
	// lockFor calls the key function on v, then takes q, the log's
	// sequencing point, keeping v's key for put: the user's function runs
	// with no lock held, so that it may panic or publish.
	lockFor(q *seq, v T)
	// put keeps v, of offset o and time nanos, dropping the value of the same
	// key, the oldest key beyond the bound, and the values older than oldest.
	// Its key is the one lockFor kept.
	put(o uint64, nanos, oldest int64, v T)
	// read copies into buf the values kept from offset from on that are not
	// older than oldest, and returns how many, and the offset after the last
	// one copied (or tail, if none is left). The records' times are l's
	// (timeOf): l, not its method value, which would be allocated at every
	// read.
	read(from, tail uint64, oldest int64, buf []Record[T], l *logOf[T]) (int, uint64)
	// each calls f with each value kept from offset from on, in offset
	// order.
	each(from uint64, f func(o uint64, nanos int64, v T))
	// start returns the offset a start of s begins at, given the tail.
	start(s Start, tail uint64) uint64
	// countFrom returns the number of values kept from offset from on.
	countFrom(from uint64) int
	// offsetsFrom returns the offsets of the values kept from offset from
	// on, in order.
	offsetsFrom(from uint64) []uint64
	// oldestOffset returns the offset of the oldest value kept, and false
	// if none is.
	oldestOffset() (uint64, bool)
	// newest returns the time of the last value kept, and false if none is.
	newest() (nanos int64, ok bool)
	// trim drops the values older than oldest.
	trim(oldest int64)
	// size returns the number of values kept.
	size() int
}

// keyed is the keyedLog of keys of type K.
type keyed[T any, K comparable] struct {
	key   func(T) K
	max   int
	items []keyedItem[T, K] // in offset order; the dead are dropped values
	live  int               // the items not dead
	index map[K]int         // the index of each key's item
	first int               // items[:first] are dead
	next  K                 // the key of the value being published (see lockFor); guarded by the sequencing point
}

type keyedItem[T any, K comparable] struct {
	off   uint64
	nanos int64
	k     K
	v     T
	dead  bool
}

func newKeyed[T any, K comparable](key func(T) K, max int) *keyed[T, K] {
	return &keyed[T, K]{key: key, max: max, index: make(map[K]int)}
}

func (c *keyed[T, K]) lockFor(q *seq, v T) {
	k := c.key(v)
	q.Lock()
	c.next = k
}

func (c *keyed[T, K]) put(o uint64, nanos, oldest int64, v T) {
	k := c.next
	var zero K
	c.next = zero // not kept alive by the log
	if i, ok := c.index[k]; ok {
		c.drop(i)
	}
	c.items = append(c.items, keyedItem[T, K]{off: o, nanos: nanos, k: k, v: v})
	c.index[k] = len(c.items) - 1
	c.live++
	for c.first < len(c.items) && c.live > c.max {
		if !c.items[c.first].dead {
			c.drop(c.first) // the key whose latest value is the oldest
		}
		c.first++
	}
	c.trim(oldest)
}

func (c *keyed[T, K]) trim(oldest int64) {
	for c.first < len(c.items) && (c.items[c.first].dead || c.items[c.first].nanos < oldest) {
		if !c.items[c.first].dead {
			c.drop(c.first)
		}
		c.first++
	}
	if len(c.items) > 2*c.live+16 {
		c.compact()
	}
}

func (c *keyed[T, K]) size() int { return c.live }

func (c *keyed[T, K]) countFrom(from uint64) int {
	n := 0
	for _, it := range c.items[c.at(from):] {
		if !it.dead {
			n++
		}
	}
	return n
}

func (c *keyed[T, K]) offsetsFrom(from uint64) []uint64 {
	var offs []uint64
	for _, it := range c.items[c.at(from):] {
		if !it.dead {
			offs = append(offs, it.off)
		}
	}
	return offs
}

func (c *keyed[T, K]) oldestOffset() (uint64, bool) {
	for _, it := range c.items[c.first:] {
		if !it.dead {
			return it.off, true
		}
	}
	return 0, false
}

func (c *keyed[T, K]) newest() (int64, bool) {
	for i := len(c.items) - 1; i >= c.first; i-- {
		if !c.items[i].dead {
			return c.items[i].nanos, true
		}
	}
	return 0, false
}

// drop marks item i dead: its key has a later value, or is dropped.
func (c *keyed[T, K]) drop(i int) {
	it := &c.items[i]
	if c.index[it.k] == i {
		delete(c.index, it.k)
	}
	var zero T
	it.v, it.dead = zero, true // release what v references
	c.live--
}

// compact drops the dead items, in O(n): the items grow at most to twice the
// live ones, so that putting a value costs O(1) amortised.
func (c *keyed[T, K]) compact() {
	live := c.items[:0]
	for _, it := range c.items[c.first:] {
		if !it.dead {
			c.index[it.k] = len(live)
			live = append(live, it)
		}
	}
	clear(c.items[len(live):])
	c.items, c.first = live, 0
}

// at returns the index of the first item of offset o or more.
func (c *keyed[T, K]) at(o uint64) int {
	return c.first + sort.Search(len(c.items)-c.first, func(i int) bool { return c.items[c.first+i].off >= o })
}

func (c *keyed[T, K]) read(from, tail uint64, oldest int64, buf []Record[T], l *logOf[T]) (int, uint64) {
	n := 0
	i := c.at(from)
	for ; i < len(c.items) && n < len(buf); i++ {
		if it := &c.items[i]; !it.dead && it.nanos >= oldest {
			p := &buf[n] // field by field: see follower.readAt
			p.Offset, p.Time, p.Value, p.Skipped = it.off, l.timeOf(it.nanos), it.v, 0
			n++
		}
	}
	if n == 0 || i == len(c.items) {
		return n, tail
	}
	return n, buf[n-1].Offset + 1
}

func (c *keyed[T, K]) each(from uint64, f func(o uint64, nanos int64, v T)) {
	for _, it := range c.items[c.at(from):] {
		if !it.dead {
			f(it.off, it.nanos, it.v)
		}
	}
}

func (c *keyed[T, K]) start(s Start, tail uint64) uint64 {
	switch s.kind {
	case startLast:
		// The last n values kept.
		live := slices.Collect(func(yield func(uint64) bool) {
			for _, it := range c.items[c.first:] {
				if !it.dead && !yield(it.off) {
					return
				}
			}
		})
		if s.n >= uint64(len(live)) {
			return 0
		}
		return live[uint64(len(live))-s.n]
	case startAt:
		return s.n // as Seek(o): see At
	case startEarliest:
		return 0
	}
	return tail
}
