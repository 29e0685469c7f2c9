package topic

// The publication of a retained type: appended to its log under the
// sequencing point, sent in offset order to the subscriptions of T and
// Record[T], then live to From sources and slow wildcard subscriptions.

import "unsafe"

// publish is Publish of a retained type: it appends v and, holding the
// sequencing point, delivers it and its record to the subscriptions of T
// and Record[T], so that each receives in offset order; then, having let
// go of it, it runs the functions of the user's: OnLoss functions, and the
// From sources and slow wildcard subscriptions the value reaches, which
// receive it live. It returns v's offset, and false if Shutdown sealed the
// log first: then v was counted as a publication after the seal.
func (l *logOf[T]) publish(g *guard, e *entry, v T) (uint64, bool) {
	// l.stamp(), inlined but for its clock reading (stamp is too long for
	// the compiler to inline).
	var now int64
	if !l.limit.NoTime {
		if c := l.clock.cached.Load(); c != 0 {
			now = c - 1
		} else {
			now = l.stampSlow()
		}
	}
	if l.keyed != nil {
		l.keyed.lockFor(&l.mu, v)
	} else if !l.mu.tryLock() { // l.mu.Lock(), its first try inlined
		l.mu.lockContended()
	}
	if l.sealed {
		l.publishSealed(g, e, v)
		return 0, false
	}
	off, nanos := l.appendLocked(v, now)
	if len(l.hands) != 0 {
		// A follower that receives v may read the log at once: publish
		// v's offset before it is handed out (as sendOrdered does).
		l.mu.publish()
		l.handOut(v)
	}
	// Safety: e is the entry of T (see Publish); l.rec that of Record[T].
	r := (*route[T])(unsafe.Pointer(e.route.Load()))
	rr := (*route[Record[T]])(unsafe.Pointer(l.rec.route.Load()))
	if (r == nil || !r.ordered) && rr == nil {
		// Nothing to send in order: the followers read the log. (r is nil
		// once Shutdown has sealed a route with nothing to count.)
		l.mu.Unlock()
		l.waiters.wake()
		if r != nil && r.live {
			sendLive(g, r, v, nil, true)
		}
		return off, true
	}
	if rr == nil && len(r.direct) == 1 && r.onlyDirect() {
		// sendOrdered's steps for a route of one plain subscription, the
		// common case, without its two calls: sendInOrder's first step,
		// which leaves nothing for sendLive; and if the route changed
		// meanwhile (sendOrderedOne did nothing), the rest of them.
		l.mu.publish()
		if sendOrderedOne(g, e, r, v) {
			l.unlock()
			return off, true
		}
		l.sendOrderedPlain(g, e, r, v)
		return off, true
	}
	l.sendOrdered(g, e, r, rr, off, nanos, v)
	return off, true
}

// publishSealed is publish once Shutdown has sealed the log, with the
// sequencing point held, which it lets go: v, whose publisher loaded the
// route before the seal, goes the way of a publication after it, to the
// sealed route that counts it Closed for each subscription, the followers
// included, once Shutdown has stored it (see logCore.sealed).
//
//go:noinline
func (l *logOf[T]) publishSealed(g *guard, e *entry, v T) {
	routed := l.routed
	l.mu.Unlock()
	<-routed
	// Safety: e is the entry of T; sealed, its route has no log.
	if r := (*route[T])(unsafe.Pointer(e.route.Load())); r != nil {
		deliver(g, e, r, v)
	}
}

// sendOrdered is the rest of publish when there are subscriptions of T or
// Record[T] to send v to, with the sequencing point held, which it lets go.
func (l *logOf[T]) sendOrdered(g *guard, e *entry, r *route[T], rr *route[Record[T]], off uint64, nanos int64, v T) {
	// A subscription that receives v may read the log at once (Read, a
	// follower): publish v's offset before sending it.
	l.mu.publish()
	var x any
	r, x = sendInOrder(g, e, r, v, &l.lost, true)
	if rr != nil {
		l.sendRecords(g, r, rr, x, off, nanos, v)
		return
	}
	l.unlock()
	// r.live: it has From sources or slow interface subscriptions, the
	// only sources sendLive sends to (its own subscriptions it skips).
	if r != nil && r.live {
		sendLive(g, r, v, x, true)
	}
}

// sendOrderedPlain is the rest of sendOrdered when there are no
// subscriptions of Record[T], and sendInOrder's first step (sendOrderedOne)
// was taken already, with the sequencing point held, which it lets go.
//
//go:noinline
func (l *logOf[T]) sendOrderedPlain(g *guard, e *entry, r *route[T], v T) {
	r, x := sendInOrderPlain(g, e, r, v, &l.lost, true)
	l.unlock()
	if r != nil && r.live {
		sendLive(g, r, v, x, true)
	}
}

// sendRecords is the rest of sendOrdered when there are subscriptions of
// Record[T]: it sends v's record to them, lets go of the sequencing point,
// then sends v and its record live. r and x are what sendInOrder returned
// for v. (Its own function: a record, which holds a time.Time, would be
// zeroed on every publication that sends none.)
//
//go:noinline
func (l *logOf[T]) sendRecords(g *guard, r *route[T], rr *route[Record[T]], x any, off uint64, nanos int64, v T) {
	// A record is for the subscriptions that asked for records, not for
	// the interface subscriptions that would match any value.
	rec := Record[T]{Offset: off, Time: l.timeOf(nanos), Value: v}
	rr, rx := sendInOrder(g, l.rec, rr, rec, &l.rlost, false)
	l.unlock()
	if rr != nil && rr.live {
		// Deferred: if a From function of T's calls runtime.Goexit, the
		// sources of the records still get theirs, as those after it on
		// T's route get v (see sendSlow).
		defer sendLive(g, rr, rec, rx, false)
	}
	if r != nil && r.live {
		sendLive(g, r, v, x, true)
	}
}

// unlock lets go of the sequencing point after a publication that sent in
// order, then reports the losses it kept, if any.
func (l *logOf[T]) unlock() {
	if l.lost.n == 0 && l.rlost.n == 0 {
		l.mu.Unlock()
		l.waiters.wake()
	} else {
		l.unlockReporting()
	}
}

// unlockReporting lets go of the sequencing point, then reports the losses
// the publication kept in lost and rlost.
//
//go:noinline
func (l *logOf[T]) unlockReporting() {
	lost, rlost := l.lost, l.rlost
	l.lost, l.rlost = lossBuffer[T]{}, lossBuffer[Record[T]]{}
	l.mu.Unlock()
	l.waiters.wake()
	lost.report()
	rlost.report()
}

// sendInOrder sends v to the subscriptions of type T on the route of e,
// with the sequencing point held: the plain ones, then those with a policy
// or an OnLoss function, whose losses it keeps in lost. It returns the
// route it used, nil if nothing is left for sendLive, and v if it boxed it.
// Interface sources are sent to only if boxed.
func sendInOrder[T any](g *guard, e *entry, r *route[T], v T, lost *lossBuffer[T], boxed bool) (*route[T], any) {
	if r == nil {
		return nil, nil
	}
	if len(r.direct) == 1 && r.onlyDirect() && sendOrderedOne(g, e, r, v) {
		return nil, nil // nothing for sendLive: r has no other source
	}
	return sendInOrderPlain(g, e, r, v, lost, boxed)
}

// sendInOrderPlain is sendInOrder but its first step: it sends v to the
// plain subscriptions of the route of e, loaded again if it is no longer
// r, then to those with a policy or an OnLoss function.
func sendInOrderPlain[T any](g *guard, e *entry, r *route[T], v T, lost *lossBuffer[T], boxed bool) (*route[T], any) {
	r, x := sendPlain(g, e, r, v, boxed, nil) // the log counts the publication
	if r == nil {
		return nil, nil
	}
	for _, t := range r.typed {
		if s, own := t.(*sub[T]); own {
			s.offer(g, v, lost)
		}
	}
	return r, x
}

// sendOrderedOne is sendInOrder for a route of one plain subscription, the
// common case: sendOne's steps, but the log counts the publication. It
// reports false, having done nothing, if the route is no longer r (a
// subscription came or went meanwhile): sendPlain then loads it again.
//
//go:noinline
func sendOrderedOne[T any](g *guard, e *entry, r *route[T], v T) bool {
	o := &r.direct[0]
	if ch := o.channel(); ch == nil {
		return true // cancelled
	} else if !o.roomIn(ch) {
		o.sub.lost.addFull() // the send would fail: no guard (see countFull)
		return true
	}
	c := g.enter()
	// The channel and the route must be loaded inside the guard (see
	// sendOne).
	ch := o.channel()
	if (*route[T])(unsafe.Pointer(e.route.Load())) != r {
		g.exit(c)
		return false
	}
	if ch != nil {
		select {
		case ch <- v:
			o.sub.sent.addIn(c)
		default:
			o.sub.lost.addFull()
		}
	}
	g.exit(c)
	return true
}

// sendLive offers v to the From sources of r and, if boxed, to its slow
// interface sources, out of order.
func sendLive[T any](g *guard, r *route[T], v T, x any, boxed bool) {
	sendSlow(g, r, v, x, 0, true, boxed)
}
