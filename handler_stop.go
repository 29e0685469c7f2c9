package topic

// How a handler stops, and the handlerRef through which the broker stops,
// probes and counts a handler of any type.

import "runtime"

// stop is the function Handle returns.
func (h *handler[T]) stop() {
	h.stopNoWait()
	id := goid()
	if h.worker.Load() == id {
		return // called by f: the worker ends when f returns
	}
	if closed(h.done) {
		return
	}
	h.b.mu.Lock()
	caller := h.b.handlerOfLocked(id)
	h.b.mu.Unlock()
	if caller != nil {
		// Called by another handler's function, which waits for this
		// handler: Shutdown's drain must not wait for it meanwhile. If this
		// handler waits for the caller, in a stop, neither would end.
		if !h.b.park.parkStop(caller, h) {
			return
		}
		defer h.b.park.unset(caller)
	}
	<-h.done
}

// stopNoWait is stop without the wait for the handler to end: what the end
// of its Context option's ctx does, as that of a channel subscription
// cancels it.
func (h *handler[T]) stopNoWait() {
	if h.stopping.CompareAndSwap(false, true) {
		if h.discard {
			h.discardNow()
		}
		h.s.cancel() // closes the queue: the worker ends once it is empty
	}
}

// discardNow makes the worker discard what remains and cancels f's context.
func (h *handler[T]) discardNow() {
	h.discarding.Store(true)
	h.cancelCtx()
}

func (h *handler[T]) ended() <-chan struct{}         { return h.done }
func (h *handler[T]) workerID() uint64               { return h.worker.Load() }
func (h *handler[T]) probe() chan<- chan probeResult { return h.probes }

// rouse wakes the worker if it waits for a value, or makes its next wait
// return at once: it then looks at its broker's probing again (see quiet).
func (h *handler[T]) rouse() {
	if o := h.s.opt; o != nil && o.feed != nil {
		o.feed.poke()
	} else {
		h.s.q.Waiter().Poke()
	}
}

// probed reports whether a drain or a Settle may probe the worker: while it
// does, the worker waits for its probes too (see Broker.probing).
func (h *handler[T]) probed() bool             { return h.b.probing.Load() != 0 }
func (h *handler[T]) subscription() subscriber { return h.s }

func (h *handler[T]) stats() *HandlerStats {
	return &HandlerStats{
		Accepted:     h.counts.accepted.Load(),
		Handled:      h.counts.handled.Load(),
		Retried:      h.counts.retried.Load(),
		DeadLettered: h.counts.deadLettered.Load(),
		AtLeastOnce:  h.retry != nil,
	}
}

func (h *handler[T]) lost() (errored, discarded uint64) {
	return h.counts.errored.Load(), h.counts.discarded.Load()
}

// A handlerRef is a handler of any type, as the broker keeps it.
type handlerRef interface {
	start()
	stopNoWait()
	discardNow()
	ended() <-chan struct{}
	workerID() uint64
	probe() chan<- chan probeResult
	rouse()
	subscription() subscriber
	stats() *HandlerStats
	lost() (errored, discarded uint64)
}

// forgetHandler removes h from the broker's handlers.
func (b *Broker) forgetHandler(h handlerRef) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.handlers, h)
}

// goid returns the id of the calling goroutine, read from the first line
// of its stack trace ("goroutine 18 [running]:"): the only way for a stop
// function to know it is called by the handler it stops, which it must not
// wait for. It costs about a microsecond, paid by stop and Shutdown alone.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
