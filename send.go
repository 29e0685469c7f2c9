package topic

// The publish-side senders: how a publication reaches the outlets of its
// route, plain ones inside one guard section, the others outside it, and the
// fast paths for the common routes.

import (
	"sync/atomic"
	"unsafe"
)

// deliver offers v to the route r of entry e, through the log of T if T is
// retained.
func deliver[T any](g *guard, e *entry, r *route[T], v T) {
	if r.log != nil {
		r.log.publish(g, e, v)
		return
	}
	send(g, e, r, v)
	if r.records != nil {
		r.records.countRecord(g, v)
	}
}

// sendDirect offers v to the route r of entry e, a plain route: only
// plain subscriptions of type T. It is send, made short for the common
// case. The drop path of one subscription makes no call: its full-buffer
// check and its count are written out here, not in countFull and addFull
// (routing only 13.9 -> 8.1 ns; inlined in Publish instead, the check made
// Publish's frame bigger and every other publication slower). Every other path is a call, so that v, live across none
// here, is not spilled to the stack on the drop path (routing only -9.7 %).
func sendDirect[T any](g *guard, e *entry, r *route[T], v T) {
	if len(r.direct) == 1 {
		// One subscription, the common case: hasRoom and countFull of
		// one outlet, and addFull, whose fast path is inlined.
		o := &r.direct[0]
		if ch := o.channel(); ch != nil && !o.roomIn(ch) {
			// The send would fail: no guard (see countFull). The count is
			// the publication's too (see fullAlone).
			if l := &o.sub.lost; !r.alone {
				l.addFull()
				e.published.add(1)
			} else if !l.tryAdd(aloneSlot) {
				l.addStriped(fullAlone)
			}
			return
		}
		sendOne(g, e, r, o, v)
		return
	}
	sendMany(g, e, r, v)
}

// sendOne offers v to o, the only outlet of r, a plain route of entry e
// whose buffer had room. Not inlined (see sendDirect).
//
//go:noinline
func sendOne[T any](g *guard, e *entry, r *route[T], o *outlet[T], v T) {
	c := g.enter()
	// The route and the channel must be loaded inside the guard (see
	// guard, outlet). If the route is still r, o is still its only
	// outlet: its channel is loaded without waiting for the route's
	// load to give o's address again.
	ch := o.channel()
	if (*route[T])(unsafe.Pointer(e.route.Load())) == r {
		e.published.addIn(c)
		if ch != nil {
			select {
			case ch <- v:
				o.sub.sent.addIn(c)
			default:
				o.sub.lost.addFull()
			}
		}
		g.exit(c)
		return
	}
	g.exit(c)
	sendMany(g, e, r, v) // changed meanwhile: it loads the route again
}

// sendMany offers v to route r of entry e, a plain route: of several
// outlets, or of one that changed meanwhile. Not inlined (see sendDirect).
//
//go:noinline
func sendMany[T any](g *guard, e *entry, r *route[T], v T) {
	// A route of one outlet comes from sendOne, which checked its room.
	if len(r.direct) != 1 && !hasRoom(r.direct) {
		countFull(r.direct) // every send would fail: no guard
		e.published.add(1)
		return
	}
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r = (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil || !r.plain {
		g.exit(c)
		if r != nil {
			deliver(g, e, r, v) // changed meanwhile
		}
		return
	}
	e.published.addIn(c)
	for i := range r.direct {
		o := &r.direct[i]
		ch := o.channel() // inside the guard (see outlet)
		if ch == nil {
			continue
		}
		select {
		case ch <- v:
			o.sub.sent.addIn(c)
		default:
			o.sub.lost.addFull()
		}
	}
	g.exit(c)
}

// sendBoxedDirect offers v to the route of entry e, a route of plain
// interface subscriptions only (onlyBoxed): it is send, made short, as
// sendDirect is.
func sendBoxedDirect[T any](g *guard, e *entry, v T) {
	x := any(v) // the one boxing, shared by every interface subscription, outside the guard
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r := (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil || !r.onlyBoxed {
		g.exit(c)
		if r != nil {
			deliver(g, e, r, v) // changed meanwhile
		}
		return
	}
	e.published.addIn(c)
	for i := range r.boxed {
		r.boxed[i].send(x, c)
	}
	g.exit(c)
}

// droppedAll reports whether every buffer of outs is full, so that every
// send would fail, and then counts the drops, without entering the guard. A
// cancelled subscription may still be listed in outs; it is not sent to.
func droppedAll[T any](outs []outlet[T]) bool {
	if hasRoom(outs) {
		return false
	}
	countFull(outs)
	return true
}

// countFull counts a drop on each live outlet of outs.
func countFull[T any](outs []outlet[T]) {
	for i := range outs {
		if o := &outs[i]; o.channel() != nil {
			o.sub.lost.addFull()
		}
	}
}

// hasRoom reports whether a send to one of outs may succeed: its buffer has
// room, or it is unbuffered (a receiver may be waiting).
func hasRoom[T any](outs []outlet[T]) bool {
	for i := range outs {
		o := &outs[i]
		if ch := o.channel(); ch != nil && o.roomIn(ch) {
			return true
		}
	}
	return false
}

// roomIn reports whether a send to ch, the outlet's channel, not nil, may
// succeed: its buffer has room, or it is unbuffered (a receiver may be
// waiting). It is inlined.
func (o *outlet[T]) roomIn(ch chan T) bool {
	return o.cap == 0 || queued(ch) < o.cap
}

// queued returns len(ch), which ch must not be nil, without the call that
// len of a channel compiles to: it loads the count of values queued that
// the runtime's channel header starts with, as len does. The layout is
// checked once (see countFirst); len is called if it does not hold.
func queued[T any](ch chan T) int {
	if countFirst {
		// Safety: a channel is a pointer to its header, whose first word
		// is the count (checked by countFirst), written by the runtime
		// with the channel's lock held: an atomic load reads a count it
		// had.
		return int(atomic.LoadUintptr(*(**uintptr)(unsafe.Pointer(&ch))))
	}
	return len(ch)
}

// countFirst reports whether the runtime's channel header starts with the
// count of queued values and then the capacity, as it has since Go 1.0:
// queued reads the first. Checked once, on channels of several sizes.
var countFirst = func() bool {
	for _, size := range []int{1, 3, 64} {
		ch := make(chan [3]int64, size)
		for n := range size + 1 {
			h := *(**[2]uintptr)(unsafe.Pointer(&ch))
			if h[0] != uintptr(len(ch)) || h[0] != uintptr(n) || h[1] != uintptr(cap(ch)) {
				return false
			}
			if n < size {
				ch <- [3]int64{}
			}
		}
	}
	return true
}()

// send offers v to the route r of entry e.
func send[T any](g *guard, e *entry, r *route[T], v T) {
	r, x := sendPlain(g, e, r, v, true, &e.published)
	if r == nil {
		return
	}
	// What runs the user's code, or takes several steps, runs outside the
	// guard and enters it for each send.
	sendSlow(g, r, v, x, 0, false, true)
}

// sendSlow offers v to the typed sources of r, then, if boxed, to its slow
// interface sources (x is v boxed, if sendPlain boxed it), from the i-th of
// them on; live skips the subscriptions of type T, which a retained type's
// publication sent to in order (see sendLive). If a From function calls
// runtime.Goexit, the sources after it still get v, from the deferred call,
// before the goroutine ends: the publication loses nothing for them,
// uncounted.
func sendSlow[T any](g *guard, r *route[T], v T, x any, i int, live, boxed bool) {
	n := len(r.typed)
	if boxed {
		n += len(r.boxedSlow)
	}
	defer func() {
		if i < n { // left the loops early: runtime.Goexit (a From function's panic is recovered)
			sendSlow(g, r, v, x, i+1, live, boxed)
		}
	}()
	for ; i < len(r.typed); i++ {
		if _, own := r.typed[i].(*sub[T]); live && own {
			continue
		}
		r.typed[i].deliver(g, v, nil)
	}
	if i < n && x == nil {
		x = any(v)
	}
	for ; i < n; i++ {
		s := r.boxedSlow[i-len(r.typed)]
		s.deliverBoxed(g, x, s.tab)
	}
}

// sendPlain sends v to the plain subscriptions of the route of e, inside
// one guard section, and returns the route it used (loaded inside the
// guard), nil if there is nothing more to do, and v boxed if it boxed it.
// r is the route as loaded before. Interface sources are sent to only if
// boxed. It counts the publication on pub, unless pub is nil (a retained
// type's log counts its publications).
func sendPlain[T any](g *guard, e *entry, r *route[T], v T, boxed bool, pub *tally) (_ *route[T], x any) {
	if r.onlyDirect() && droppedAll(r.direct) {
		if pub != nil {
			pub.add(1)
		}
		return nil, nil // only plain sends, all of them dropped
	}
	if len(r.direct) == 0 && (!boxed || len(r.boxed) == 0) {
		// Nothing to send inside the guard: the other sources enter it for
		// their own sends and check there that their subscription is live,
		// so they need no route loaded inside it.
		if pub != nil {
			pub.add(1)
		}
		return r, nil
	}
	if boxed && len(r.boxed)+len(r.boxedSlow) > 0 {
		x = any(v) // the one boxing, shared by every interface subscription, outside the guard
	}
	c := g.enter()
	// The route must be loaded inside the guard (see guard).
	// Safety: as in Publish.
	r = (*route[T])(unsafe.Pointer(e.route.Load()))
	if r == nil {
		g.exit(c)
		return nil, nil
	}
	if pub != nil {
		pub.addIn(c)
	}
	for i := range r.direct {
		o := &r.direct[i]
		ch := o.channel() // inside the guard (see outlet)
		if ch == nil {
			continue
		}
		select {
		case ch <- v:
			o.sub.sent.addIn(c)
		default:
			o.sub.lost.addFull()
		}
	}
	if boxed && len(r.boxed)+len(r.boxedSlow) > 0 {
		if x == nil {
			x = any(v) // the route changed since it was loaded: rare
		}
		for i := range r.boxed {
			r.boxed[i].send(x, c)
		}
	}
	g.exit(c)
	return r, x
}
