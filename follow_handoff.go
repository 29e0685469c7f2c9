package topic

// The hand-off of a caught-up channel follower: the publisher sends each
// value to its channel itself, under the sequencing point, where the pump
// would be woken to read it from the log and send it: one goroutine less
// between a publication and its receipt.

// A handoff is a channel follower's place in its log's list of those the
// publications send to directly. Its pump puts it there when a read finds
// nothing more, and waits; it leaves the list on the first publication
// that finds its receiver fallen behind (more values in the channel than
// its slack, see handOffSlack) or the channel full, on a Seek, or at the
// follower's end, and its pump reads the log again from where the hand-off
// stopped.
//
// Invariant: while the handoff is on the list, its pump does not read, and
// nothing but what holds the sequencing point moves the position (a Seek
// takes it, see seek): so the values handed out are the offsets from from
// on, n of them, in order, and drop, under the sequencing point, moves the
// position past them as the pump's own read would have.
type handoff[T any] struct {
	ch   chan<- T
	f    *follower[T]
	sent *tally // the subscription's count of what it was sent
	// from is the position when it went on the list, n the values handed
	// out since, i its index in the list, on whether it is on it. Guarded
	// by the log's sequencing point.
	from, n uint64
	i       int
	on      bool
}

// handOut sends v, just appended, to the channel of each follower on the
// list, with the sequencing point held. One whose receiver has fallen
// behind, or whose channel is full, leaves the list, and its pump is woken
// to read v and what follows from the log: a hand-off is for a receiver
// that keeps up, whose next value is due at once; one that does not is
// better served by its pump, which sends what the log has in batches, and
// wakes it less often. Behind is more values in the channel than the
// hand-off's slack (see handOffSlack). A send never waits, and never meets
// a closed channel: a pump closes its channel once its follower has quit,
// after it took its handoff off the list (see waitHanded).
func (l *logOf[T]) handOut(v T) {
	for i := 0; i < len(l.hands); {
		h := l.hands[i]
		if len(h.ch) <= handOffSlack(h.n) {
			select {
			case h.ch <- v:
				h.n++
				i++
				continue
			default:
			}
		}
		l.drop(h) // moves the last of the list to i
		h.f.poke()
	}
}

// handOffSlack is how many values the channel of a hand-off that has
// handed out n may hold, its receiver still counted as keeping up: one for
// every 16 handed out, up to 64. None, for a hand-off just begun: a
// receiver that cannot keep up with its publisher falls behind within a
// few values, and goes back to its pump before the publisher has paid for
// many sends. A few, for one that has kept up a while: a hiccup of its
// goroutine (a preemption, the machine's) leaves values in the channel,
// and were it to go back to its pump, the pump's wake-up would add to the
// delay of the values behind them.
func handOffSlack(n uint64) int {
	return int(min(n/16, 64))
}

// drop takes h off the list, if it is on it, and settles what was handed
// out: the position moves past it, and it counts as delivered, committed
// (the channel took it) and sent. With the sequencing point held.
func (l *logOf[T]) drop(h *handoff[T]) {
	if !h.on {
		return
	}
	last := l.hands[len(l.hands)-1]
	l.hands[h.i], last.i = last, h.i
	l.hands[len(l.hands)-1] = nil
	l.hands = l.hands[:len(l.hands)-1]
	h.on = false
	if h.n == 0 {
		return
	}
	f, end := h.f, h.from+h.n
	f.mu.Lock() // as move: a reader's Seek
	f.pos.Store(end)
	f.mu.Unlock()
	if end > f.delivered.Load() {
		f.delivered.Store(end)
	}
	h.sent.add(h.n)
	h.n = 0
	f.commit(end - 1)
}

// waitHanded is the pump's wait when a read found nothing: it puts the
// follower's handoff on the log's list, if the follower has read all there
// is and no Seek has come since its last read, and waits until it is taken
// off; then it reports true, and the pump reads again. It reports false at
// once, having waited for nothing, if the follower cannot be handed values
// (it has quit, a Seek is not yet read, or a value came meanwhile).
func (f *follower[T]) waitHanded() bool {
	h, l := f.h, f.l
	l.mu.Lock()
	ok := !f.ended.Load() && f.seeks.Load() == f.seen && f.pos.Load() == l.mu.tail()
	if ok {
		h.from, h.n, h.i, h.on = f.pos.Load(), 0, len(l.hands), true
		l.hands = append(l.hands, h)
	}
	l.mu.Unlock()
	if !ok {
		return false
	}
	// Woken by the publication that dropped it (see handOut), a Seek
	// or the follower's end (end pokes after it sets ended), or by a poke
	// left from an earlier wait: any of them takes it off the list, if it
	// is still on it, and the pump looks again.
	<-f.wake.c
	f.wake.woken.Add(1)
	l.mu.Lock()
	l.drop(h)
	l.mu.Unlock()
	return true
}

// handed returns the position of a follower with a handoff on the list,
// past the values handed out: ok is false if it has none, or it is not on
// the list (then the position is f.pos).
func (f *follower[T]) handed() (o uint64, ok bool) {
	_, o, ok = f.committedHanded()
	return o, ok
}

// committedHanded returns the committed offset and, if the follower has
// a handoff on the list, the position past what it was handed, which
// counts as committed (handed is true); read under the sequencing point,
// where drop commits what was handed out.
func (f *follower[T]) committedHanded() (committed, o uint64, handed bool) {
	h := f.h
	if h == nil {
		return f.committed.Load(), 0, false
	}
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	committed = f.committed.Load()
	if h.on {
		o = h.from + h.n
		committed = max(committed, o)
	}
	return committed, o, h.on
}

// sentWith returns t, the count of what the follower's subscription was
// sent, with what the publications handed out and drop has not yet
// counted: the two are read together, under the sequencing point, as drop
// moves the one into the other.
func (f *follower[T]) sentWith(t *tally) uint64 {
	h := f.h
	if h == nil {
		return t.load()
	}
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	return t.load() + h.n // 0 once dropped
}
