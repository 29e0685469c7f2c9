package topic

import (
	"context"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Shutdown closes the broker, for a program's shutdown path, draining it
// first: it returns once every handler has handled what it had queued, and
// what the handlers published meanwhile has been handled in turn, or once ctx
// ends.
//
// From its first call, the broker registers nothing more: Subscribe returns
// a closed channel, Handle a stop that does nothing, Retain does nothing.
// Everything registered carries on: handlers handle what they have queued,
// and what they publish (results, dead letters) reaches the handlers and
// channel subscriptions it matches, handlers that had emptied their queue
// included, so that a pipeline of handlers drains end to end in any order of
// registration. A publication from outside the handlers is delivered alike
// during the drain, and may prolong it: stop a program's own publishers
// first (Done tells them when). Publishers that never stop can keep a
// handler's queue from ever being found empty, and then only ctx ends the
// drain. Once no handler holds or has queued a value (so none can publish
// any more), Shutdown closes every subscription, channel subscriptions and
// handlers' queues, so that range loops over them end; the values already
// accepted remain receivable. Shutdown then waits for the handlers'
// goroutines to end, or for ctx, and returns nil.
//
// If ctx ends first, the handlers discard what remains, counted as
// Discarded, their functions' contexts are cancelled, the subscriptions are
// closed at once, and Shutdown returns ctx's error without waiting further: a
// function that ignores its context may still be running. A ctx that ends
// as the drain ends may be the outcome with nothing left to discard. A
// handler is part of the drain while it has a value in hand, so a function
// that never returns holds the drain until ctx ends. Cut short, Shutdown
// does not wait for the handlers' goroutines to discard and count, so their
// counts are not yet final when it returns: Settle, with a context of its
// own, returns nil once every handler's goroutine has ended, and then
// Subscriptions has the final counts (a function that ignores its context
// holds them, and Settle, until it returns).
//
// Nothing published after the subscriptions are closed is lost silently: a
// publication that would have reached a subscription closed by Shutdown is
// counted there as Closed and reported to its OnLoss function (a value
// published by a function that ignored its context, by an outside publisher
// racing the end of the drain, or after Shutdown returned). Shutdown does not
// count publications that no subscription matches. A retained type's log
// ends with the broker: what a follower had not read when Shutdown closed
// it is lost, and counted in its Subscriptions entry (not told to OnLoss)
// from where the log stood then: Skipped what retention had trimmed before
// the follower reached it, and the rest Closed, or Discarded for a handler
// follower, as a handler's queue; its Lag is then zero. A publication of a
// retained type that races the close may wait for it (no longer than
// Shutdown takes to close the subscriptions, never for a subscriber), to
// be counted once: in the log, or as Closed. After Shutdown,
// Subscriptions returns the final counts of the subscriptions Shutdown
// closed, and of the handlers it waited for, stopped ones included (after
// a Shutdown cut short, once Settle has returned nil); Read returns
// nothing and Append reports false.
//
// Shutdown may be called from a handler's function, and by any number of
// goroutines at once. Called from a handler's function (or from a From or
// OnLoss function that the handler's goroutine runs), it cannot wait for that
// handler: it returns once every other handler is idle, or once ctx ends;
// that handler then goes on, and the drain ends after it. Handlers whose
// function waits inside Shutdown, or inside the stop of another handler,
// are not waited for meanwhile: they wait for the others. Shutdown is
// idempotent: a later call waits like the first. Every call that is not
// from a handler returns the outcome of the one drain, whatever its own
// context: nil if it ended with the handlers quiescent, else the error of
// the context that cut it short. A nil ctx panics.
func (b *Broker) Shutdown(ctx context.Context) error {
	mustContext(ctx, "Shutdown")
	d, self := b.beginDrain(ctx.Err())
	if self != nil {
		return d.waitInside(ctx, self)
	}
	select {
	case <-d.done:
	case <-ctx.Done():
		// Cuts the drain short, unless it has ended meanwhile: either way
		// d.err is the outcome.
		d.cutShort(ctx.Err())
		<-d.done // sealing waits for no handler
	}
	if !d.waitPumps(ctx) {
		return d.err
	}
	// Sealed: the handlers only finish what outside publications racing
	// the end of the drain gave them, if anything.
	for _, h := range d.handlers {
		if closed(h.ended()) {
			continue
		}
		select {
		case <-h.ended():
		case <-ctx.Done():
			return d.err
		}
	}
	return d.err
}

// waitPumps waits until the pumps of the channel followers the seal closed
// have counted and reported what they held and closed their channels;
// false if ctx ended first. A pump's own call (from its OnLoss function)
// does not wait for itself.
func (d *drain) waitPumps(ctx context.Context) bool {
	var self uint64
	for _, s := range d.pumps {
		done, id := s.pumping()
		if closed(done) {
			continue
		}
		if self == 0 {
			self = goid()
		}
		if id == self {
			continue
		}
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Done returns a channel that is closed once Shutdown has been called: from
// then on the broker registers nothing more (see Shutdown), and the drain
// is under way or over. It lets a component built on the broker, such as a
// bridge to another system, stop taking input and refuse new work at the
// moment the broker does, without a subscription of its own. Successive
// calls return the same channel.
func (b *Broker) Done() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
		if b.closed {
			close(b.done)
		}
	}
	return b.done
}

// closed reports whether c is closed.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// A drain is the work of Shutdown: it waits until the broker's handlers are
// quiescent, then seals the broker.
//
// Quiescence is decided by probing: a worker answers a probe only while it
// waits for a value, holding none, with the count of values it has taken
// from its queues and of those queued. The drain probes every worker in
// turn, twice over. If every worker answered both rounds with the same count
// taken and nothing queued, then each took nothing between its two answers,
// so it held no value and published nothing from its first answer to its
// second. All the first answers precede all the second ones, so at the
// moment between the rounds no handler held a value; any value a handler had
// sent before it went idle is either counted as taken by its receiver or
// seen queued by the second round. So no handler can publish again unless a
// publication from outside reaches one. A handler whose worker has ended
// counts what it took in all, and never publishes again.
type drain struct {
	b        *Broker
	handlers []handlerRef  // every handler not ended when the drain began; never changes
	done     chan struct{} // closed once the broker is sealed
	err      error         // the drain's outcome; written before done is closed
	cut      chan struct{} // closed when a caller's context ended
	cutOnce  sync.Once
	cutErr   error // written before cut is closed
	// pumps are the channel followers whose pumps close their channels
	// once the seal ended their followers: Shutdown waits for them, for
	// their final counts. Written before done is closed.
	pumps []subscriber
}

// A parking lists the handlers whose function waits inside a call of the
// broker's that waits for other handlers: Shutdown, or the stop of another
// handler. The drain does not probe them (they hold a value, but wait for
// the others to be idle or to end), and releases the Shutdown calls once the
// others are quiescent.
type parking struct {
	mu sync.Mutex
	// parked holds each handler waiting. Guarded by mu.
	parked map[handlerRef]parked
	// changed is closed, and replaced, whenever parked changes. Guarded by
	// mu.
	changed chan struct{}
}

// parked is why a handler's function waits: release, for a Shutdown, is the
// channel that lets it return; stopping, for a stop, is the handler it
// waits for.
type parked struct {
	release  chan struct{}
	stopping handlerRef
}

// set records that the function of h waits, for why.
func (p *parking) set(h handlerRef, why parked) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(h, why)
}

func (p *parking) setLocked(h handlerRef, why parked) {
	if p.parked == nil {
		p.parked = make(map[handlerRef]parked)
	}
	p.parked[h] = why
	p.changedLocked()
}

// parkStop records that the function of caller waits in the stop of
// target, unless target waits, directly or through others, in a stop of
// caller: then waiting would never end, and parkStop reports false.
func (p *parking) parkStop(caller, target handlerRef) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for t, n := target, 0; t != nil && n <= len(p.parked); n++ {
		if t == caller {
			return false
		}
		t = p.parked[t].stopping
	}
	p.setLocked(caller, parked{stopping: target})
	return true
}

// unset records that the function of h returned from its wait.
func (p *parking) unset(h handlerRef) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.parked[h]; ok {
		delete(p.parked, h)
		p.changedLocked()
	}
}

func (p *parking) changedLocked() {
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// snapshot returns the handlers parked and the channel closed when that
// changes.
func (p *parking) snapshot() (map[handlerRef]parked, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return maps.Clone(p.parked), p.changed
}

// release lets the Shutdown calls of ps return, those still parked.
func (p *parking) release(ps map[handlerRef]parked) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h, why := range ps {
		if why.release != nil && p.parked[h].release == why.release {
			delete(p.parked, h)
			close(why.release)
		}
	}
	p.changedLocked()
}

// beginDrain marks the broker closed and starts its drain if it is the
// first call; it returns the drain and the handler whose function calls, if
// any.
//
// ended is the error of the caller's context if it has ended already: a
// drain it begins is cut short before it starts, so that a context ended
// before Shutdown was called ends before the drain, whose probes the
// handlers may answer at once.
func (b *Broker) beginDrain(ended error) (*drain, handlerRef) {
	id := goid()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed && b.done != nil {
		close(b.done)
	}
	b.closed = true
	if b.drain == nil {
		d := &drain{b: b, done: make(chan struct{}), cut: make(chan struct{})}
		for h := range b.handlers {
			d.handlers = append(d.handlers, h)
		}
		b.drain = d
		if ended != nil {
			d.cutShort(ended)
		}
		b.running.Add(1)
		go d.run()
	}
	return b.drain, b.handlerOfLocked(id)
}

// handlerOfLocked returns the handler whose worker is the goroutine with id
// id, or nil.
func (b *Broker) handlerOfLocked(id uint64) handlerRef {
	for h := range b.handlers {
		if h.workerID() == id {
			return h
		}
	}
	return nil
}

func (d *drain) run() { d.seal(d.quiesce()) }

// quiesce returns nil once every handler is quiescent and none is parked,
// or the error of the context that cut the drain short.
func (d *drain) quiesce() error {
	for {
		parked, changed := d.b.park.snapshot()
		quiet, err := d.quiet(parked, changed)
		switch {
		case err != nil:
			return err
		case !quiet:
			continue // parked changed: ask again
		case len(parked) == 0:
			return nil
		}
		// The rest is quiescent: the Shutdown calls from inside handlers
		// return, and those handlers go on. A stop from inside a handler
		// returns when the handler it stops ends, which changes parked.
		released := false
		for _, why := range parked {
			released = released || why.release != nil
		}
		if released {
			d.b.park.release(parked)
			continue
		}
		select {
		case <-changed:
		case <-d.cut:
			return d.cutErr
		}
	}
}

// quiet probes the handlers not parked until two rounds in a row find them
// quiescent, and reports true; false if parked changed meanwhile.
func (d *drain) quiet(parked map[handlerRef]parked, changed <-chan struct{}) (bool, error) {
	q, cut := quiet(&d.b.probing, d.handlers, parked, changed, d.cut)
	if cut {
		return false, d.cutErr
	}
	return q, nil
}

// quiet probes the handlers hs, but those parked, until two rounds in a row
// find them quiescent (see drain), and reports true; false if changed or cut
// is closed first, and then whether cut was. probing is their broker's count
// of those probing: counted in it, each call wakes every worker once, so
// that one waiting without its probes (see Broker.probing) waits again with
// them.
// Invariant: a worker that found probing zero and waits without its probes
// found it so before the count went up. The wake-up that follows the count
// finds it waiting, or leaves a token, or finds a token there that the
// worker has not taken yet: the worker alone receives on its wake-up
// channel, so its wait takes the token at once, and it then looks at the
// count again, after the count went up, and waits with its probes.
func quiet(probing *atomic.Int32, hs []handlerRef, parked map[handlerRef]parked, changed, cut <-chan struct{}) (quiet, wasCut bool) {
	probing.Add(1)
	defer probing.Add(-1)
	for _, h := range hs {
		h.rouse()
	}
	var prev []probeResult
	reply := make(chan probeResult, 1)
	for {
		cur := make([]probeResult, len(hs))
		idle := true
		for i, h := range hs {
			if _, ok := parked[h]; ok {
				cur[i].parked = true
				continue
			}
			select {
			case h.probe() <- reply:
				cur[i] = <-reply
			case <-h.ended():
				cur[i].taken = h.stats().Accepted // published before it ended
			case <-changed:
				return false, false
			case <-cut:
				return false, true
			}
			idle = idle && cur[i].queued == 0
		}
		if idle && prev != nil && slicesEqual(prev, cur) {
			select {
			case <-cut:
				return false, true // ended too: it ended first, as far as anyone can tell
			default:
			}
			return true, false
		}
		prev = cur
	}
}

func slicesEqual(x, y []probeResult) bool {
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

// waitInside is Shutdown called from the function of handler h.
func (d *drain) waitInside(ctx context.Context, h handlerRef) error {
	if closed(d.done) {
		return d.err
	}
	release := make(chan struct{})
	d.b.park.set(h, parked{release: release})
	defer d.b.park.unset(h)
	select {
	case <-release:
		return nil
	case <-d.done:
		return d.err
	case <-ctx.Done():
		d.cutShort(ctx.Err())
		return ctx.Err()
	}
}

// cutShort ends the drain because a caller's context ended with err: the
// handlers discard what remains, and the broker is sealed at once. Once
// seal has begun without a cut (its cutOnce.Do), it does nothing: the
// outcome is decided. A cut that began first is the outcome, even if the
// drain found the handlers quiescent meanwhile (see seal).
func (d *drain) cutShort(err error) {
	d.cutOnce.Do(func() {
		for _, h := range d.handlers {
			h.discardNow()
		}
		d.cutErr = err
		close(d.cut)
	})
}

// seal closes every subscription of the broker. The routes keep them, as
// sinks that count what reaches them as Closed (see closedSink), so that a
// publication after the seal loses nothing silently. err is the drain's
// outcome.
func (d *drain) seal(err error) {
	if err == nil {
		// Decided: no cut from now on. Unless a cut came first: cutShort
		// discards in the handlers before it closes d.cut, so a handler can
		// answer as idle, and quiet find them quiescent, in between. Once
		// Do returns, a cut that came first has set cutErr, and it is the
		// outcome: the context ended before the drain did.
		d.cutOnce.Do(func() {})
		err = d.cutErr
	}
	b := d.b
	// The logs first, outside mu, which a replay takes under a log's
	// sequencing point: no publication appends to a log from now on, and
	// one that finds it sealed waits for the sealed routes (see
	// logCore.sealed). No Retain adds a log: the broker is closed.
	b.mu.Lock()
	logs := b.logsLocked()
	b.mu.Unlock()
	routed := make(chan struct{})
	for _, c := range logs {
		c.seal(routed)
	}
	b.mu.Lock()
	live := b.liveLocked()
	final := live
	seen := make(map[subscriber]bool, len(live))
	for _, s := range live {
		seen[s] = true
	}
	for _, h := range d.handlers {
		if s := h.subscription(); !seen[s] {
			final = append(final, s) // stopped, still handling its queue
		}
	}
	for _, s := range live {
		s.sealLocked()
	}
	// The subscriptions kept off their type's route (followers, replays in
	// flight) are routed as sinks, to count what would have reached them,
	// in the sealed route itself: added after it, a publication that found
	// the route sealed, without the log, and before them, would be counted
	// neither by the follower's log nor by a sink.
	held := make(map[*entry][]heldSource)
	for s := range b.held {
		srcs := s.sources()
		if e := b.entryLocked(srcs[len(srcs)-1].key()); e != nil {
			if src, boxed := decide(srcs, e); src != nil {
				held[e] = append(held[e], heldSource{src, boxed})
			}
		}
	}
	// The entries of records first: a publication of a retained T between
	// the seals of T and of Record[T] would find T's route sealed, with no
	// log, and count its record on the route of Record[T] (countRecord),
	// which counts only sealed sources: its plain subscriptions, not yet
	// sealed, would neither get the record nor count it. Sealed first, the
	// route of Record[T] counts what T's log still sends it.
	for _, records := range []bool{true, false} {
		for _, e := range b.all {
			if c := e.log.Load(); !e.iface && (c != nil && c.rec == e) == records {
				e.edit.sealLocked(e, held[e])
				delete(held, e)
			}
		}
	}
	for e, srcs := range held { // an interface's entry, which is not sealed
		for _, h := range srcs {
			e.edit.addLocked(e, h.src, h.boxed) // as a closedSink: its owner is dead
		}
	}
	if t := b.table.Load(); t != nil {
		n := *t // a new header for the same table
		n.sealed = true
		b.table.Store(&n)
		// No publisher that loaded a route listing them still sends.
		n.guard.wait()
	}
	for _, s := range live {
		s.closeLocked()
		if done, _ := s.pumping(); done != nil {
			d.pumps = append(d.pumps, s)
		}
	}
	if final == nil {
		final = []subscriber{} // not nil: Subscriptions tells sealed from live by it
	}
	b.final = final
	b.mu.Unlock()
	close(routed)
	// Where the followers' logs stood, now that they take no publication:
	// what a follower has not read is lost (see sub.stats). Outside mu,
	// which a replay takes under a log's sequencing point.
	for _, s := range live {
		s.freeze()
	}
	if err != nil {
		d.cutShort(err)
	}
	d.err = err
	b.running.Add(-1) // the drain's goroutine ends: before done, for the count
	close(d.done)
}

// A closedSink stands in a route for a source of a subscription Shutdown
// closed: it counts what reaches it as Closed and reports it to the
// subscription's OnLoss function. It is slow, so it is called outside the
// guard. Never changes.
type closedSink[T any] struct {
	source
	own bool // the source is the subscription's own type
}

func newClosedSink[T any](src source) closedSink[T] {
	return closedSink[T]{src, any(src) == any(src.owner())}
}

func (s closedSink[T]) slow() bool { return true }

// closedSource returns the source s stands for.
func (s closedSink[T]) closedSource() source { return s.source }

func (s closedSink[T]) deliver(g *guard, v T, pub *tally) {
	if pub != nil {
		pub.add(1)
	}
	if o, ok := s.owner().(*sub[T]); ok && s.own {
		o.lose(Loss[T]{Cause: Closed, Value: v}, nil) // no boxing
		return
	}
	if s.owner().countClosed() {
		s.owner().reportClosed(any(v), false)
	}
}

func (s closedSink[T]) tabFor(reflect.Type) unsafe.Pointer { return nil }

func (s closedSink[T]) outlet() (unsafe.Pointer, *lossCounter, *tally) { return nil, nil, nil } // it is slow

func (s closedSink[T]) deliverBoxed(g *guard, x any, _ unsafe.Pointer) {
	if s.owner().countClosed() {
		s.owner().reportClosed(x, s.own)
	}
}
