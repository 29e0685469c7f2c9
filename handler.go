package topic

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// DefaultHandlerBuffer is the capacity of a handler's queue when Handle is
// given no Buffer option.
const DefaultHandlerBuffer = 64

// Handle registers f to be called with every value of type T the broker
// delivers to it, and returns the function that stops it.
//
// A handler is a subscription, configured by the options of Subscribe
// (Buffer, From, Overflow, Name, OnLoss, Context), whose queue is drained
// by one goroutine of its own that calls f with each value, in the order
// the subscription accepted them. f never runs on a publisher's goroutine: a
// slow handler fills its own queue, and then loses values under its Overflow
// policy, counted, but slows no publisher and no other subscription. Without
// Buffer, the queue holds DefaultHandlerBuffer values. The queue behaves as
// a channel of that capacity would (a value leaves it when the goroutine
// takes it for f; Buffer(0) accepts a value only while the goroutine waits
// for one), but it is not a channel: publishers put values in it without a
// lock, and the goroutine takes what is there in batches and sleeps only
// when it is empty.
//
// By default a handler is at most once: f is called once per value, and a
// value whose call returns an error or panics is lost, counted as Errored and
// reported to OnLoss. With Retry it is at least once: a value leaves the
// handler only when f returns nil; after an error, a panic or an attempt that
// timed out (AttemptTimeout), f is called again with the same value after a
// back-off, and the next value waits, so order is kept. A value that fails
// all its attempts, or whose call returns an error wrapped by Permanent, is
// published on the same broker as a DeadLetter[T] (follow a retained
// DeadLetter[T] to keep them all: see DeadLetter). An at-least-once f may
// see a value more than once (its earlier attempt may have done the work
// before failing), so it must tolerate duplicates.
//
// A handler whose From sources take dead letters (a source of a DeadLetter
// type, or of an interface a dead letter may implement, such as DeadLettered
// or any) re-drives them: what such a source delivers goes into a second
// queue, of the same capacity and policy, so that the handler knows which
// values came from a dead letter and never dead-letters them again (see
// DeadLetter). The handler takes values from both queues, each in order.
//
// A panic in f is recovered and treated as an error, a *PanicError holding
// the stack. f receives a context that is cancelled when the handler stops
// discarding (DiscardOnStop, or a Shutdown whose context ended) and, with
// AttemptTimeout, when the attempt's time is up; a draining stop leaves it
// live so that queued values are handled normally.
//
// f may publish, subscribe, cancel, and register or stop handlers, its own
// included, on the same broker.
//
// Stop stops new deliveries at once. Then, by default, the handler handles
// what its queue had accepted, retries included; with DiscardOnStop it
// discards it, counted as Discarded, and cancels f's context. Stop waits for
// the call in flight and for the goroutine to end, unless it is called by f
// itself, which it cannot wait for: it then returns at once, and the handler
// ends when f returns. Called by the function of another handler that this
// one waits for, in a stop of it (directly or through others), it returns
// at once too, rather than wait for ever. Stop is idempotent; every other
// call returns once the handler has ended.
//
// A function that calls runtime.Goexit (as t.FailNow does) on the
// handler's goroutine ends the handler: f, whose value in hand is then lost
// as Errored, or an OnLoss or From function that the handler's losses or
// dead letters reach there. The subscription is cancelled, and what it had
// queued is Discarded.
//
// After Shutdown, Handle registers nothing and returns a stop that does
// nothing.
func (b *Broker) Handle[T any](f func(context.Context, T) error, opts ...Option[T]) (stop func()) {
	if f == nil {
		panic("topic: Handle function is nil")
	}
	h := &handler[T]{b: b, f: f, done: make(chan struct{}), probes: make(chan chan probeResult)}
	_, cancel := b.subscribe(opts, h.bind, callerPC()) // starts the worker (see start)
	if cancel == nil {
		close(h.done)
		return func() {}
	}
	return h.stop
}

// RetryPolicy says how an at-least-once handler retries a value.
//
// The n-th retry waits Base·2ⁿ⁻¹, at most Max, less a random fraction of up
// to Jitter of that delay, which spreads retries that failed together.
type RetryPolicy struct {
	Attempts int           // calls per value, the first included; at least 1
	Base     time.Duration // wait before the first retry; 0 retries at once
	Max      time.Duration // longest wait; 0 means no bound but Base doubling
	Jitter   float64       // in [0, 1]
}

// Delay returns the wait before retry n (1 for the first): Base doubled n-1
// times, at most Max (if set), less a random fraction of up to Jitter of it.
// It is never negative: a doubling past the largest Duration stops there,
// and a Jitter above 1 counts as 1 (one that is not a number, or below
// zero, as none).
// It is what a handler waits, and what a component retrying on the
// handler's behalf elsewhere (a message redelivered by a server) asks for.
func (p RetryPolicy) Delay(n int) time.Duration { return p.delay(n) }

// delay is Delay.
func (p RetryPolicy) delay(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d > 0 && (p.Max == 0 || d < p.Max); i++ {
		if d > math.MaxInt64/2 {
			d = math.MaxInt64 // doubled, it would wrap: no longer than that
			break
		}
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	if p.Jitter > 0 && d > 0 { // (false for NaN)
		d -= time.Duration(rand.Float64() * min(p.Jitter, 1) * float64(d))
	}
	return max(d, 0)
}

// Retry makes a handler at least once, retrying values under p. Misuse
// panics when Handle is called: p.Attempts below one, a negative duration, a
// Jitter outside [0, 1], or the option given to Subscribe. Given more than
// once, the last one wins.
func Retry[T any](p RetryPolicy) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		switch {
		case p.Attempts < 1:
			panic("topic: RetryPolicy.Attempts must be at least 1")
		case p.Base < 0 || p.Max < 0:
			panic("topic: RetryPolicy delays must not be negative")
		case !(p.Jitter >= 0 && p.Jitter <= 1): // NaN too
			panic("topic: RetryPolicy.Jitter must be in [0, 1]")
		}
		c.handlerOnly = "Retry"
		c.retry = &p
	}}
}

// AttemptTimeout bounds each call of a handler's function: its context is
// cancelled after d. The call's result decides: an error (such as the
// context's) is a failed attempt, nil a success. A d of zero or less sets no
// bound. Given to Subscribe it panics. Given more than once, the last one
// wins.
func AttemptTimeout[T any](d time.Duration) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.handlerOnly = "AttemptTimeout"
		c.timeout = max(d, 0)
	}}
}

// DiscardOnStop makes a handler's stop discard the values it has queued,
// counted as Discarded, instead of handling them, and cancel the context of
// the call in flight. Given to Subscribe it panics.
func DiscardOnStop[T any]() Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		c.handlerOnly = "DiscardOnStop"
		c.discard = true
	}}
}

// A PanicError is what a handler's function returned, in effect, when it
// panicked: the panic's value and the stack of the goroutine at the panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("topic: handler panicked: %v", e.Value) }

// Unwrap returns the panic's value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// HandlerStats are the counts of a handler subscription.
type HandlerStats struct {
	Accepted     uint64 `json:"accepted"`      // values taken from the queue by the worker
	Handled      uint64 `json:"handled"`       // values for which the function returned nil
	Retried      uint64 `json:"retried"`       // retries decided, all values together: counted as the back-off before one begins
	DeadLettered uint64 `json:"dead_lettered"` // values published as dead letters
	AtLeastOnce  bool   `json:"at_least_once"` // whether Retry was given
}

// Attempt returns the attempt of the handler call whose context is ctx, or
// a context derived from it: 1 for the first call with a value, 2 for its
// first retry, and so on; 0 if ctx is not a handler's. A function that
// makes an idempotency key per value (a message ID that a server uses to
// drop duplicates) makes a new one when Attempt is 1 and reuses it on
// retries. It tells the attempt in progress: a goroutine that keeps ctx
// after the call returned sees the handler's later attempts. A nil ctx
// panics.
func Attempt(ctx context.Context) int {
	mustContext(ctx, "Attempt")
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}

type attemptKey struct{}

// callCtx is the context of a handler's calls: the handler's, and the
// attempt in progress as the value of attemptKey.
type callCtx struct {
	context.Context
	attempt *atomic.Int32
}

func (c *callCtx) Value(k any) any {
	if k == (attemptKey{}) {
		return int(c.attempt.Load()) // boxing 1 to 255 does not allocate
	}
	return c.Context.Value(k)
}
