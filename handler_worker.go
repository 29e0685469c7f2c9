package topic

// A handler's goroutine: it takes each value from its queues (or its log),
// calls the function, retries it under the RetryPolicy, and counts and
// reports what it loses.

import (
	"context"
	"errors"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/seedaa7df82c/topic/internal/queue"
)

// handler is a handler subscription of type T.
type handler[T any] struct {
	b       *Broker
	f       func(context.Context, T) error
	s       *sub[T] // its subscription, which feeds its queue (or its log); set by Broker.subscribe
	retry   *RetryPolicy
	timeout time.Duration
	discard bool // DiscardOnStop

	ctx        context.Context // cancelled when the handler discards, or ends
	cancelCtx  context.CancelFunc
	call       *callCtx     // ctx, telling the attempt: what f is given
	attempt    atomic.Int32 // the attempt in progress, for Attempt
	discarding atomic.Bool  // set by stop with DiscardOnStop, or by Shutdown
	stopping   atomic.Bool  // set by the first stop
	worker     atomic.Uint64
	done       chan struct{} // closed when the worker ends
	counts     handlerCounts
	// probes carries the questions of Shutdown's drain, which the worker
	// answers only while it waits for a value, holding none. Never changes.
	probes chan chan probeResult
	w      *work[T] // the worker's state; worker only
}

// A probeResult is a worker's answer to the drain: the values it has taken
// from its queues so far, and those still queued.
type probeResult struct {
	taken  uint64
	queued int
	parked bool // not asked: its function is inside Shutdown
}

// handlerCounts are a handler's counts, written only by its worker. It
// publishes them when it would wait for a value or back off before a retry,
// every flushEvery values, and when it ends, so that counting costs no
// atomic operation per value.
type handlerCounts struct {
	accepted, handled, retried, deadLettered, errored, discarded atomic.Uint64
}

type localCounts struct {
	accepted, handled, retried, deadLettered, errored, discarded uint64
}

const flushEvery = 64

// store publishes the counts of l that differ from those of p, the counts
// it last published, and makes p a copy of l.
func (c *handlerCounts) store(l, p *localCounts) {
	publish := func(dst *atomic.Uint64, n, last uint64) {
		if n != last {
			dst.Store(n)
		}
	}
	publish(&c.accepted, l.accepted, p.accepted)
	publish(&c.handled, l.handled, p.handled)
	publish(&c.retried, l.retried, p.retried)
	publish(&c.deadLettered, l.deadLettered, p.deadLettered)
	publish(&c.errored, l.errored, p.errored)
	publish(&c.discarded, l.discarded, p.discarded)
	*p = *l
}

// bind makes s the handler's subscription and takes the handler options of
// c, with Broker.mu held.
func (h *handler[T]) bind(s *sub[T], c *config[T]) handlerRef {
	h.s = s
	h.retry, h.timeout, h.discard = c.retry, c.timeout, c.discard
	h.ctx, h.cancelCtx = context.WithCancel(context.Background())
	h.call = &callCtx{Context: h.ctx, attempt: &h.attempt}
	return h
}

// start starts the worker, once the subscription is registered.
func (h *handler[T]) start() {
	h.b.running.Add(1)
	go h.run()
}

func (h *handler[T]) run() {
	h.worker.Store(goid())
	w := work[T]{q: h.s.q}
	if o := h.s.opt; o != nil {
		w.rd, w.feed = o.redrive, o.feed
	}
	h.w = &w
	// One deferred call, of a method: the frame of run is under every
	// idle handler's wait (see TestAnIdleHandlerKeepsTheSmallestStack).
	defer h.finish(&w)
	for h.drain(&w) {
	}
	w.ended = true
}

// finish ends the handler's goroutine, abandoning what it holds if a
// function of the user's ended it (runtime.Goexit) rather than its queues'
// close. The end runs in a deferred call of its own, so that it runs even if
// a function that abandon reports to calls runtime.Goexit again.
func (h *handler[T]) finish(w *work[T]) {
	defer h.end(w)
	if !w.ended {
		h.abandon(w)
	}
}

// end frees a follower's name, publishes the final counts, releases the
// handler and tells whoever waits for it (stop, Shutdown, Settle) that it
// has ended.
func (h *handler[T]) end(w *work[T]) {
	if w.feed != nil {
		w.feed.freeName() // after its last commit (see holdName)
	}
	h.counts.store(&w.n, &w.published)
	h.cancelCtx()
	h.b.forgetHandler(h)
	h.b.running.Add(-1) // before done: whoever waits for it sees the count
	close(h.done)
}

// errGoexit is the error of a call of a handler's function that called
// runtime.Goexit.
var errGoexit = errors.New("topic: the handler's function called runtime.Goexit")

// abandon accounts for what a worker leaves when a function of the user's
// that its goroutine runs called runtime.Goexit, which ends the goroutine:
// f (then the value in hand is Errored), or an OnLoss or From function that
// a loss or a dead letter of the worker's reached (then the value in hand
// was counted already). The subscription is cancelled, so that it accepts
// nothing more, and what its queues hold is Discarded. Every loss is
// counted, and the counts published, before the OnLoss function hears of
// any: if it calls runtime.Goexit too, it misses the rest of the reports,
// and the counts are still whole.
func (h *handler[T]) abandon(w *work[T]) {
	var lost []Loss[T]
	if w.exited {
		w.n.errored++
		lost = append(lost, Loss[T]{Cause: Errored, Value: w.v, Err: errGoexit})
		h.settled(w)
	}
	if w.feed != nil {
		h.putBack(w) // the follower's queue is the log
	}
	h.s.cancel() // closes the queues once no publisher puts in them
	for w.q != nil && (w.bi < w.bn || h.take(w)) {
		w.n.accepted++
		w.n.discarded++
		lost = append(lost, Loss[T]{Cause: Discarded, Value: h.handOut(w)})
	}
	h.counts.store(&w.n, &w.published)
	if o := h.s.opt; o != nil && o.onLoss != nil {
		for _, l := range lost {
			callHook(o.onLoss, l)
		}
	}
}

// work is the worker's state, kept outside drain so that a panic of f,
// recovered once per drain rather than once per call, finds it.
type work[T any] struct {
	n, published localCounts     // counts, and those last published
	q, rd        *queue.Queue[T] // the queue and the re-drive queue, if any; nil for a follower
	buf          []T             // a batch taken from q or rd, made at the first (see take)
	feed         feed[T]         // a follower's log, instead of the queues (see Follow)
	off          uint64          // v's offset, from feed
	bi, bn       int             // of the batch of bn values, from buf or feed, bi are handed out
	v            T               // the value being handled
	redriven     bool            // v came from the re-drive queue: the batch did
	attempt      int             // v's attempt in progress or next; 0: none
	inCall       bool            // f is running
	timers       []*callTimer    // the TimeCalls functions when the call in progress began
	began        time.Time       // when it began, if timers is not nil
	exited       bool            // f called runtime.Goexit
	ended        bool            // the queues were closed and emptied: the worker ends
	cancel       context.CancelFunc
}

// drain handles values from the queues until they are closed, and returns
// false; or until f panics, and returns true after recording the failed
// attempt, to be called again. A defer per call would cost more than f does.
func (h *handler[T]) drain(w *work[T]) (again bool) {
	defer func() {
		if !w.inCall {
			return // not a panic of f's: let it go on
		}
		p := recover()
		w.inCall = false
		if w.cancel != nil {
			w.cancel()
			w.cancel = nil
		}
		if p == nil {
			w.exited = true // runtime.Goexit in f: the worker ends (see abandon)
			return
		}
		// If failed sets up a retry, the next drain makes it; if not, the
		// value is done with, lost or dead-lettered.
		perr := &PanicError{Value: p, Stack: debug.Stack()}
		if w.timers != nil {
			h.timed(w.timers, w.attempt, w.began, perr)
		}
		if !h.failed(w, perr) {
			h.settled(w)
		}
		again = true
	}()
	if w.attempt > 0 {
		h.handle(w) // a retry after a panic
		h.settled(w)
	}
	for h.next(w) {
		w.n.accepted++
		if h.discarding.Load() {
			h.discardInHand(w)
		} else {
			w.attempt = 1
			h.handle(w)
		}
		h.settled(w)
		if w.n.accepted%flushEvery == 0 {
			h.counts.store(&w.n, &w.published)
		}
	}
	return false
}

// discardInHand loses the value in hand, Discarded.
//
//go:noinline
func (h *handler[T]) discardInHand(w *work[T]) { h.lose(w, Loss[T]{Cause: Discarded, Value: w.v}) }

// next takes the next value into w.v; false once the queues are closed and
// empty. Before it waits it publishes the counts, and while it waits it
// answers the drain's probes.
//
// It takes the values of a queue in batches (see take), and hands them out
// one at a time: a value leaves the queue, and frees its room, when it is
// handed out, as it would when received from a channel, so that the queue
// holds what its capacity says whatever the batch.
func (h *handler[T]) next(w *work[T]) bool {
	if w.feed != nil {
		return h.nextFollowed(w)
	}
	for w.bi == w.bn {
		if !h.take(w) && !h.waitQueued(w) {
			return false
		}
	}
	w.v = h.handOut(w)
	return true
}

// handlerLeave returns when a value leaves a handler's queue: as its worker
// takes it, one at a time, under DropOldest, whose publishers evict the
// oldest value the worker has not taken, which must then be the oldest that
// takes room in the queue, and for a capacity of one or none, which leaves
// nothing to take at once; otherwise as the worker hands it out of the batch
// it took (see next).
func handlerLeave(p Policy, capacity int) queue.Leave {
	if p == DropOldest || capacity <= 1 {
		return queue.OnTake
	}
	return queue.OnDone
}

// batch returns how many values the worker takes from its queue at once.
func (h *handler[T]) batch() int {
	if h.s.q.Leave() == queue.OnTake {
		return 1
	}
	return min(followBatch, h.s.q.Cap())
}

// take takes a batch from the re-drive queue, if it has values, else from
// the queue; false if both are empty.
func (h *handler[T]) take(w *work[T]) bool {
	if w.buf == nil {
		// Made for the first value: an idle handler holds no batch. (Not
		// ready is what a Take would find; waitQueued looks again after
		// its Sleep, so a value put meanwhile is not missed.)
		if !w.ready() {
			return false
		}
		w.buf = make([]T, h.batch())
	}
	from, n := w.rd, 0
	if w.rd != nil {
		n = w.rd.Take(w.buf)
	}
	if n == 0 {
		from, n = w.q, w.q.Take(w.buf)
	}
	if n == 0 {
		return false
	}
	w.bi, w.bn, w.redriven = 0, n, from == w.rd
	return true
}

// ready reports whether the queue or the re-drive queue has a value at its
// head, or is closed (see queue.Queue.Ready).
func (w *work[T]) ready() bool { return w.q.Ready() || w.rd != nil && w.rd.Ready() }

// handOut returns the next value of the batch, which leaves its queue.
func (h *handler[T]) handOut(w *work[T]) T {
	p := &w.buf[w.bi]
	v := *p
	var zero T
	*p = zero // the batch holds no reference to a value handed out
	w.bi++
	switch {
	case w.q.Leave() == queue.OnTake: // it left as it was taken
	case w.redriven:
		w.rd.Done(1)
	default:
		w.q.Done(1)
	}
	return v
}

// waitQueued waits until the queues may have a value, publishing the
// counts first and answering the drain's probes meanwhile, and reports
// whether to take again; once they are closed it takes what is left, and
// reports whether there was any.
func (h *handler[T]) waitQueued(w *work[T]) bool {
	h.counts.store(&w.n, &w.published) // about to wait
	wt := w.q.Waiter()                 // the re-drive queue's too
	for !w.q.Closed() {
		wt.Sleep()
		if !w.ready() {
			if !h.probed() {
				<-wt.C() // a drain that begins probing wakes it (see quiet)
			} else {
				select {
				case <-wt.C():
				case r := <-h.probes:
					wt.Awake()
					h.answer(w, r)
					continue
				}
			}
		}
		wt.Awake()
		return true
	}
	// The queues are closed once no publisher puts in them (see
	// closeLocked; the re-drive queue after the queue): this take finds
	// every value put, where the one before the close was seen may not.
	return h.take(w)
}

// nextFollowed is next for a follower: it takes the next value from the log,
// waiting for one if it has to; false once the follower quits.
//
// It reads what the log has, up to followBatch values at once, and hands
// them out one at a time: one read and one move of the position for the
// batch. The first value of a batch is handed out as read; each after it
// only while the follower is current (see follower.current), so that after
// a Seek returned at most the value in hand is of the old position, and
// after the follower quit none is handed out. What is left of a batch goes
// back to the log (putBack), unread: a Seek reads from where it moved to,
// and a follower that quit leaves it where it would have been had the
// worker read one value at a time.
//
// Discarding (DiscardOnStop, or a Shutdown whose context ended), it takes no
// more: what follows the value in hand stays in the log (or goes back to
// it), uncommitted, for the follower's name to resume from, rather than be
// read only to be discarded (which depended on whether the stop had ended
// the follower yet).
func (h *handler[T]) nextFollowed(w *work[T]) bool {
	for {
		if w.bi < w.bn {
			// The first as read, as a read of one value would: a stop
			// that comes after the read finds it in hand.
			if w.bi == 0 || !h.discarding.Load() && w.feed.current() {
				w.v, w.off = w.feed.handOut(w.bi)
				w.bi++
				return true
			}
		}
		h.putBack(w)
		if h.discarding.Load() {
			return false
		}
		if n := w.feed.readBatch(followBatch); n > 0 {
			w.bn = n
			continue
		}
		h.counts.store(&w.n, &w.published) // about to wait
		if w.feed.probeWait(nil, h.probes, h) != nil {
			return false
		}
	}
}

// putBack ends the worker's batch, if any, returning to the log what it
// has not handed out.
func (h *handler[T]) putBack(w *work[T]) {
	if w.bn > 0 {
		w.feed.putBack(w.bi, w.bn)
		w.bi, w.bn = 0, 0
	}
}

// settled is called once the worker is done with w.v, whatever became of
// it: a follower commits it.
func (h *handler[T]) settled(w *work[T]) {
	if w.feed != nil {
		w.feed.commit(w.off)
	}
}

// answer tells the drain what the worker has taken and what is queued; it
// is called while the worker holds no value.
func (h *handler[T]) answer(w *work[T], r chan probeResult) {
	var queued int
	if w.feed != nil {
		queued = int(min(w.feed.lag(), 1<<31-1)) // the log is its queue
	} else {
		queued = w.q.Len() // all the worker took is handed out: it waits
		if w.rd != nil {
			queued += w.rd.Len()
		}
	}
	r <- probeResult{taken: w.n.accepted, queued: queued}
}

// answerProbe is answer for a follower's wait, on the worker's goroutine.
func (h *handler[T]) answerProbe(r chan probeResult) { h.answer(h.w, r) }

// handle calls f with w.v until it succeeds or failed says to stop.
func (h *handler[T]) handle(w *work[T]) {
	for {
		if w.timers = h.b.timerList(); w.timers != nil {
			w.began = time.Now()
		}
		w.inCall = true
		h.attempt.Store(int32(min(w.attempt, 1<<31-1)))
		var err error
		if h.timeout <= 0 {
			err = h.f(h.call, w.v)
		} else {
			err = h.callWithTimeout(w)
		}
		w.inCall = false
		if w.timers != nil {
			h.timed(w.timers, w.attempt, w.began, err)
		}
		if err == nil {
			w.n.handled++
			w.attempt = 0
			return
		}
		if !h.failed(w, err) {
			return
		}
	}
}

// callWithTimeout runs f once with w.v, under the attempt timeout, which
// is set.
func (h *handler[T]) callWithTimeout(w *work[T]) error {
	// A child of call, whose Value tells the attempt; call's Done is that
	// of a cancelCtx, so the timer is linked to it without a goroutine.
	ctx, cancel := context.WithTimeout(h.call, h.timeout)
	w.cancel = cancel
	err := h.f(ctx, w.v)
	cancel()
	w.cancel = nil
	return err
}

// failed records that attempt w.attempt of w.v failed with err, and reports
// whether to try again, after waiting the back-off; w.attempt is then the
// next attempt, else 0.
func (h *handler[T]) failed(w *work[T], err error) bool {
	k := w.attempt
	w.attempt = 0
	switch {
	case h.discarding.Load():
		// Stopping, discarding: the failure is likely the cancellation of
		// f's context, and the value is dropped as the queue is.
		h.lose(w, Loss[T]{Cause: Discarded, Value: w.v, Err: err})
		return false
	case h.retry == nil:
		h.lose(w, Loss[T]{Cause: Errored, Value: w.v, Err: err})
		return false
	case k >= h.retry.Attempts || isPermanent(err):
		if w.redriven || isDeadLetter(w.v) {
			// Never dead-lettered again: see DeadLetter.
			h.lose(w, Loss[T]{Cause: Errored, Value: w.v, Err: err})
			return false
		}
		w.n.deadLettered++
		h.b.Publish(DeadLetter[T]{Value: w.v, Err: err, Attempts: k, Handler: h.s.name()})
		return false
	}
	w.n.retried++
	d := h.retry.delay(k)
	if d > 0 {
		// About to wait, with the value in hand: its acceptance and its
		// retries so far are seen meanwhile (Subscriptions, Watch).
		h.counts.store(&w.n, &w.published)
	}
	if !h.wait(d) {
		h.lose(w, Loss[T]{Cause: Discarded, Value: w.v, Err: err})
		return false
	}
	w.attempt = k + 1
	return true
}

// wait sleeps d, or less if the handler starts discarding; it reports
// whether the handler should go on.
func (h *handler[T]) wait(d time.Duration) bool {
	if d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-h.ctx.Done():
			t.Stop()
		}
	}
	return !h.discarding.Load()
}

// lose counts l and reports it to the subscription's OnLoss function.
func (h *handler[T]) lose(w *work[T], l Loss[T]) {
	if l.Cause == Discarded {
		w.n.discarded++
	} else {
		w.n.errored++
	}
	if o := h.s.opt; o != nil && o.onLoss != nil {
		callHook(o.onLoss, l)
	}
}
