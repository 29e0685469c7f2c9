package topic

// How a follower waits for a record: whether a read would find one, the
// wait itself (answering the drain's probes, woken for AckWait), and the
// log's waitList that every publication wakes.

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

var (
	errQuit = errors.New("topic: follower quit")
	errStop = errors.New("topic: wait stopped")
)

// ready reports whether a read would find a record. Of a log with an age
// bound, it trims the values that have all aged out (see agedOut).
func (f *follower[T]) ready() bool {
	l := f.l
	tail := l.mu.tail()
	switch {
	case f.readNext() >= tail:
		return false
	case l.limit.Age <= 0:
		return true // the value at tail-1, the last published, is kept
	case l.keyed != nil:
		l.mu.Lock()
		nanos, ok := l.keyed.newest()
		l.mu.Unlock()
		return ok && !l.expired(nanos, l.stamp())
	}
	// The last value published is the last to expire: if it has, a read
	// finds nothing to return, however many it skips; they are trimmed.
	if l.lastExpired(tail) {
		l.raiseAged(tail)
		return false
	}
	return true
}

// catchUp is called by the reader when ready found no record: it does what
// a read would do without a record to return, and reports whether it did
// anything: it skips values of a ring that have all aged out from the
// position on, counting them as a read would, so that a waiting follower
// is told of them, and its lag is zero, not the count of values it will
// never read. (A keyed log skips nothing.)
func (f *follower[T]) catchUp() bool {
	l := f.l
	if l.keyed != nil || f.pos.Load() >= l.mu.tail() {
		return false
	}
	f.readAt(nil, false)
	return true
}

// wait waits until a read would find a record (nil), or the follower quits
// (errQuit), or stop is closed (errStop).
func (f *follower[T]) wait(stop <-chan struct{}) error {
	return f.probeWait(stop, nil, nil)
}

// probeWait is wait, answering the drain's probes meanwhile. With AckWait,
// it waits no later than when its oldest read not committed is due to be
// read again.
func (f *follower[T]) probeWait(stop <-chan struct{}, probes <-chan chan probeResult, a answerer) error {
	if f.l == nil {
		return errQuit
	}
	for {
		switch {
		case f.ended.Load():
			f.poke() // for another goroutine waiting on it too (a misuse)
			return errQuit
		case f.ready(), f.ack != nil && f.ack.due(f.l.now()):
			return nil // the next read applies the re-read (see readAt)
		case f.catchUp():
			continue // moved: look again
		}
		f.l.waiters.add(f.wake)
		if f.ready() || f.ended.Load() { // published between the check and the add
			f.l.waiters.remove(f.wake)
			continue
		}
		if f.ack != nil {
			f.alarm()
		}
		// end pokes wake.c after it sets ended, so quitting needs no case
		// of its own; nor do the probes while none may come (a drain that
		// begins probing wakes the follower, which then looks again: see
		// quiet): with nothing else to wait for, a plain receive (a select
		// of several channels costs as much again as the wake-up).
		if stop == nil && (probes == nil || !a.probed()) {
			<-f.wake.c
		} else {
			select {
			case <-f.wake.c:
			case r := <-probes:
				a.answerProbe(r)
			case <-stop:
				f.l.waiters.remove(f.wake)
				return errStop
			}
		}
		f.wake.woken.Add(1)
		f.l.waiters.remove(f.wake)
	}
}

// alarm arms the ackState's timer to poke the follower once its oldest
// read not committed is due to be read again (see start), so that a waiting
// follower returns for it. The timer, made once, is left armed when the
// wait ends: a poke after that costs the next wait one more look.
func (f *follower[T]) alarm() {
	a := f.ack
	a.mu.Lock()
	defer a.mu.Unlock()
	// end stops the timer under mu after it sets ended: armed after that,
	// it would keep the follower for up to AckWait after its end.
	if len(a.reads) == 0 || f.ended.Load() {
		return
	}
	d := time.Duration(max(a.reads[0].to+a.wait+1-f.l.now(), 0))
	if a.timer == nil {
		a.timer = time.AfterFunc(d, f.poke)
	} else {
		a.timer.Reset(d)
	}
}

// poke wakes the follower if it waits.
func (f *follower[T]) poke() {
	select {
	case f.wake.c <- struct{}{}:
	default:
	}
}

// A waitList holds the followers waiting for the next value of a log. A
// publication wakes them all and empties the list, at a cost only when some
// wait: it loads n after storing the log's tail, and a follower adds itself
// before it checks the tail again, so one of the two sees the other.
type waitList struct {
	n  atomic.Int32
	mu sync.Mutex
	ws []*waiter // guarded by mu
}

// A waiter is a follower's place in a waitList.
type waiter struct {
	c chan struct{} // buffered 1: a publication, a seek or a quit
	// i is its index in the list, -1 if not in it; written with the list's
	// mu held. Only its follower adds it, so once its follower loads -1 it
	// stays -1 until that follower adds it again.
	i atomic.Int32
	// woken counts its follower's wake-ups: every return from a blocking
	// wait, whatever woke it. A wait costs a park and an unpark; the count
	// is what shows that an idle follower is not woken (the tests).
	woken atomic.Uint64
}

func newWaiter() *waiter {
	w := &waiter{c: make(chan struct{}, 1)}
	w.i.Store(-1)
	return w
}

func (l *waitList) add(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.i.Load() < 0 {
		w.i.Store(int32(len(l.ws)))
		l.ws = append(l.ws, w)
		l.n.Store(int32(len(l.ws)))
	}
}

func (l *waitList) remove(w *waiter) {
	if w.i.Load() < 0 {
		// Woken, so removed by the publication: the follower does not
		// contend for mu with the publication still waking the others.
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := w.i.Load(); i >= 0 {
		last := l.ws[len(l.ws)-1]
		l.ws[i] = last
		last.i.Store(i)
		l.ws[len(l.ws)-1] = nil
		l.ws = l.ws[:len(l.ws)-1]
		w.i.Store(-1)
		l.n.Store(int32(len(l.ws)))
	}
}

// wake wakes every follower waiting, and empties the list. Its check is
// inlined in every publication; the wake-up is wakeAll.
func (l *waitList) wake() {
	if l.n.Load() != 0 {
		l.wakeAll()
	}
}

func (l *waitList) wakeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, w := range l.ws {
		select {
		case w.c <- struct{}{}:
		default:
		}
		w.i.Store(-1)
		l.ws[i] = nil
	}
	l.ws = l.ws[:0]
	l.n.Store(0)
}
