package topic

import (
	"reflect"
	"time"

	"github.com/seedaa7df82c/topic/internal/ring"
)

// Retention bounds what the broker keeps of a retained type: at most Count
// values, and, if Age is positive, none older than Age.
//
// The time of a value is read from the clock about once per tick of a
// millisecond (and at least once per 64 publications): the publications of
// a type within one tick share a reading, so that a busy type does not pay
// a clock reading (about 30 ns) per publication. A record's time is
// therefore that of its publication to within a tick, never later, and the
// age bound holds to within a tick too (a value is never found expired
// before it is Age old by the log's own times). While a retained type is
// published, a timer of the broker's ends each tick by forgetting the
// reading; it stops once the type has not been published for 50 ticks. It
// is a timer, not a goroutine, so a testing/synctest bubble may end with it
// pending; the first publication after it stopped makes a new one (two
// small allocations, once per idle spell). A retained type declared inside
// a synctest bubble belongs to it, like the rest of a broker made there; one
// declared outside may be published inside bubbles and out, though its
// times then mix two clocks and mean nothing across them.
//
// NoTime spares the publications even that: records then carry the zero
// Time, and Age must be zero.
type Retention struct {
	Count  int
	Age    time.Duration
	NoTime bool
}

// A Record is a value of a retained type with the offset and time the broker
// gave it when it was published. Records are made by the broker: a Record
// published by Publish is delivered like any value, outside the log of T.
type Record[T any] struct {
	Offset uint64
	Time   time.Time // within a clock tick (see Retention), without a monotonic reading: records compare with ==
	Value  T
	// Skipped is, for a record a follower read, the number of values just
	// before it that retention trimmed before the follower reached them (or,
	// with AckWait, before it could read them again); zero otherwise.
	Skipped uint64
}

func (Record[T]) record() {}

func (r Record[T]) recordValue() any { return r.Value }

// Retain declares T a retained type of the broker, bounded by r.
//
// Every publication of a retained type gets the next offset, from zero, and
// the time, at one sequencing point per type: publications of T are
// delivered one at a time, in offset order, so that every subscription of
// type T (or Record[T]) receives them in the same order, whatever the
// publishers. The broker keeps the latest values within r, for replay
// (Replay), pull reads (Broker.Read) and subscriptions to Record[T], which
// receive each value with its offset and time. Memory is proportional to
// r.Count; keeping and trimming a value costs O(1).
//
// Types that are not retained are unaffected: their publication takes no
// lock. A retained type's publication holds its sequencing point while it
// sends to the subscriptions of T and Record[T]; it runs functions of the
// user's (OnLoss, From) after letting go of it, so they may publish freely.
//
// Retain panics if r.Count is not positive or r.Age is negative, or if T is
// already retained with another bound; declaring the same bound again does
// nothing. Wildcard subscriptions (to an interface type T implements) and
// From sources of type T receive the values of a retained T live, like any
// value, in offset order only if publications do not overlap: replay and
// the one order are for subscriptions whose own type is T or Record[T].
// After Shutdown, Retain does nothing. RetainLatest declares a log that
// keeps the latest value of each key instead.
func (b *Broker) Retain[T any](r Retention) { b.retain(r, func(*logOf[T]) {}, nil) }

// retain is Retain; setup completes the log before it is used, and key is
// the type of its keys, nil if it keeps the latest values rather than those
// of each key.
func (b *Broker) retain[T any](r Retention, setup func(*logOf[T]), key reflect.Type) {
	if r.Count <= 0 {
		panic("topic: Retention.Count must be positive")
	}
	if r.Age < 0 {
		panic("topic: Retention.Age must not be negative")
	}
	if r.NoTime && r.Age > 0 {
		panic("topic: Retention.Age needs times: NoTime must not be set")
	}
	typ := reflect.TypeFor[T]()
	if isInterface(typ) {
		panic("topic: an interface type cannot be retained: its publications have no one type")
	}
	var zero T
	if _, rec := any(zero).(interface{ record() }); rec {
		panic("topic: " + typ.String() + " is retained with its value type, not declared itself")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	e := b.entryLocked(keyOf[T]())
	if e == nil {
		e = b.addEntryLocked(newEntry[T](nil, typ, false))
	}
	if old := e.log.Load(); old != nil {
		if old.limit != r || old.key != key {
			panic("topic: " + typ.String() + " is already retained with another bound")
		}
		return
	}
	re := b.entryLocked(keyOf[Record[T]]())
	if re == nil {
		re = b.addEntryLocked(newEntry[Record[T]](nil, reflect.TypeFor[Record[T]](), false))
	}
	l := newLog[T](r, re)
	l.key = key
	setup(l)
	e.replay = logReplay[T, T]{l, valueOf[T], false}
	re.replay = logReplay[T, Record[T]]{l, recordOf[T], true}
	e.log.Store(&l.logCore)
	re.log.Store(&l.logCore)
	// Publications of T now go through the log: set it on T's route, which
	// exists from now on even without subscriptions.
	ed := editorOf[T]{}
	var nr route[T]
	if old := ed.load(e); old != nil {
		nr = *old
	}
	nr.log = l
	ed.store(e, &nr)
}

// Read returns up to max records of the retained type T, from offset from
// on, without subscribing, and the offset to read next. If from is no longer
// kept, the read starts at the oldest value kept and skipped says how many
// values were missed; if from is past the end, Read returns no record and
// from. Read panics if T is not retained; after Shutdown it returns nothing.
func (b *Broker) Read[T any](from uint64, max int) (recs []Record[T], next uint64, skipped uint64) {
	l := b.logOf[T]()
	if l == nil {
		if b.isClosed() {
			return nil, from, 0
		}
		panic("topic: Read of " + reflect.TypeFor[T]().String() + ", which is not retained")
	}
	if l.keyed != nil {
		return l.readKeyed(from, max)
	}
	// Without the sequencing point: tail, then the ring (see logOf).
	tail := l.mu.tail()
	r := l.ring.Load()
	if h := l.head(tail); from < h {
		skipped, from = h-from, h
	}
	if from < tail && max > 0 {
		recs = make([]Record[T], 0, min(uint64(max), tail-from))
	}
	var now int64
	if l.limit.Age > 0 {
		now = l.stamp()
	}
	o := from
	for o < tail && len(recs) < max {
		s, run, st := r.Pin(o)
		if st != ring.OK {
			if len(recs) > 0 {
				break // trimmed since, after what was read: the next Read tells
			}
			skipped, o = skipped+1, o+1 // trimmed before the first record
			continue
		}
		// A run of o's chunk, under one count (see ring.Ring).
		end, t := min(tail, o+run, o+uint64(max-len(recs))), s
		for ; o < end; o, t = o+1, t+1 {
			c := r.Cell(t)
			if l.expired(c.Nanos, now) {
				if len(recs) > 0 {
					break
				}
				skipped++ // trimmed by age before the first record
				continue
			}
			recs = append(recs, Record[T]{Offset: o, Time: l.timeOf(c.Nanos), Value: c.Value})
		}
		r.Unpin(s)
		if o < end {
			break // an expired value after what was read: the next Read tells
		}
	}
	return recs, o, skipped
}

// readKeyed is Broker.Read of a log of RetainLatest: it skips nothing.
func (l *logOf[T]) readKeyed(from uint64, n int) ([]Record[T], uint64, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tail := l.mu.tail()
	if n <= 0 || from >= tail {
		return nil, from, 0
	}
	recs := make([]Record[T], min(n, l.keyed.size()))
	k, next := l.keyed.read(from, tail, l.oldest(l.stamp()), recs, l)
	return recs[:k:k], next, 0
}

// Append publishes v like Publish and, if T is retained, returns the offset
// it was given and true. Otherwise, or after Shutdown, it returns false.
func (b *Broker) Append[T any](v T) (offset uint64, ok bool) {
	l := b.logOf[T]()
	if l == nil {
		b.Publish(v)
		return 0, false
	}
	t := b.table.Load()
	if t == nil || t.sealed {
		b.Publish(v)    // counted as Closed
		return 0, false // shut down since
	}
	return l.publish(t.guard, t.find(keyOf[T](), nil), v)
}

// logOf returns the log of T, or nil if T is not retained.
func (b *Broker) logOf[T any]() *logOf[T] {
	t := b.table.Load()
	if t == nil || t.sealed {
		return nil
	}
	e := t.find(keyOf[T](), nil)
	if e == nil {
		return nil
	}
	c := e.log.Load()
	if c == nil {
		return nil
	}
	l, _ := c.impl.(*logOf[T]) // nil for the entry of Record[T]'s own Record
	return l
}
