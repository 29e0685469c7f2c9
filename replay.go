package topic

// How a new subscription to a retained type gets its backlog: the log's
// values from its start on, then the live ones, with no gap and no duplicate.

// valueOf and recordOf make what a replay delivers of the value at offset o.
func valueOf[T any](_ *logOf[T], _ uint64, _ int64, v T) T { return v }

func recordOf[T any](l *logOf[T], o uint64, nanos int64, v T) Record[T] {
	return Record[T]{Offset: o, Time: l.timeOf(nanos), Value: v}
}

// A replayer pushes a retained type's backlog into a new subscription of
// the entry's type, then routes it for the entry, without holding the log's
// sequencing point while a function of the user's runs.
type replayer interface {
	replay(b *Broker, e *entry, s subscriber, from Start)
}

// A logReplay replays the log of T to a new subscription of the entry's
// type V, T or Record[T]; get returns the V at an offset.
type logReplay[T, V any] struct {
	l       *logOf[T]
	get     func(l *logOf[T], o uint64, nanos int64, v T) V
	records bool // V is Record[T]
}

// replay delivers each value kept from from on to s, as a publication routed
// by e would, through the source of s that decides for e (see decide), and
// routes s for e, with the sequencing point held: every publication of e's
// type before that point is in the backlog, and every one after it is sent
// to s by its publisher. So s receives each value once.
//
// If the source is s itself, the backlog is sent with the sequencing point
// held, as its publishers would, and the losses are reported to its OnLoss
// function after letting go of it: s receives in offset order, the backlog
// before the live values. If it is a From source, the backlog is copied out
// of the log, and the function called after letting go of it, so that it may
// use any log: the live values may then reach it before the end of the
// backlog, as concurrent publications reach a From source in any order.
func (r logReplay[T, V]) replay(b *Broker, e *entry, s subscriber, from Start) {
	src, boxed := decide(s.sources(), e)
	if src == nil {
		return // unreachable: s is of type V, which matches e
	}
	g := b.table.Load().guard // not nil: e is in it
	l := r.l
	route := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.held, s)
		if !s.isDead() { // not cancelled, nor closed by Shutdown, meanwhile
			e.edit.addLocked(e, src, boxed)
		}
	}
	l.mu.Lock()
	o, tail := l.startLocked(from)
	if own, ok := src.(*sub[V]); ok {
		var lost lossBuffer[V]
		l.eachLocked(o, tail, func(o uint64, nanos int64, v T) {
			own.offer(g, r.get(l, o, nanos, v), &lost)
		})
		route()
		l.mu.Unlock()
		lost.report()
		return
	}
	var backlog []V
	if l.keyed == nil {
		backlog = make([]V, 0, tail-o)
	}
	l.eachLocked(o, tail, func(o uint64, nanos int64, v T) {
		backlog = append(backlog, r.get(l, o, nanos, v))
	})
	route()
	l.mu.Unlock()
	for _, v := range backlog {
		if boxed {
			src.(boxedSource).deliverBoxed(g, any(v), nil)
		} else {
			src.(typedSource[V]).deliver(g, v, nil)
		}
	}
}

// startLocked returns the first offset a replay from s sends, after
// trimming the log, and the log's tail.
func (l *logOf[T]) startLocked(s Start) (from, tail uint64) {
	tail = l.mu.tail()
	if l.keyed != nil {
		l.keyed.trim(l.oldest(l.stamp()))
		return min(l.keyed.start(s, tail), tail), tail // a replay does not wait: see At
	}
	l.trimLocked(l.ring.Load(), tail, l.stamp())
	return s.from(l.head(tail), tail), tail
}
