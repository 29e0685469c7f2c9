package topic

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"
	"unsafe"
)

// An Option configures a subscription for values of type T.
//
// The zero Option has no effect. See Buffer and From.
type Option[T any] struct {
	apply func(*config[T])
}

// config collects the options of one Subscribe call.
type config[T any] struct {
	sub      *sub[T] // the subscription being built
	capacity int
	policy   Policy
	name     string
	onLoss   func(Loss[T])
	ctx      context.Context
	srcs     []source
	start    *Start // Replay
	follow   followKind
	ackWait  time.Duration
	// Whether Buffer, Overflow and AckWait were given, for the options a
	// follower does not take.
	capacitySet, policySet, ackWaitSet bool

	// Handler options; handlerOnly names the last one given.
	handlerOnly string
	retry       *RetryPolicy
	timeout     time.Duration
	discard     bool
}

// Buffer sets the capacity of a subscription's channel, or of a handler's
// queue (see Broker.Handle).
//
// A capacity of zero makes the subscription unbuffered, so a value reaches it
// only if a receiver is already waiting; anything else is dropped. A negative
// capacity is treated as zero. Without this option the capacity is one, the
// smallest buffer that lets a publication survive a consumer that is not
// currently blocked in a receive. Given more than once, the last one wins.
//
// The buffer is allocated when the subscription is made, at its full
// capacity: n values of type T, whether or not they are ever queued (a
// handler's queue has room for n rounded up to a power of two, with a word
// beside each value, though it holds no more than n). A
// capacity above MaxBuffer values, or whose values would take more than
// MaxBufferBytes, makes Subscribe (or Handle) panic, rather than the
// allocation kill the process. A subscriber that must not lose values to a slow consumer needs
// a retained type and a follower, not a huge buffer.
//
// The type argument cannot be inferred from n, so it is written explicitly:
//
//	ch, cancel := b.Subscribe(topic.Buffer[Tick](64))
func Buffer[T any](n int) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		checkBuffer[T](n)
		c.capacity = max(n, 0)
		c.capacitySet = true
	}}
}

// The bounds of Buffer: a buffer is allocated whole when its subscription is
// made, and an allocation the machine cannot make is a fatal error that no
// recover catches.
const (
	MaxBuffer      = 1 << 24 // values
	MaxBufferBytes = 1 << 30 // bytes of the values: capacity times the size of T
)

// checkBuffer panics if a buffer of n values of type T is above the bounds.
func checkBuffer[T any](n int) {
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	switch {
	case n > MaxBuffer:
		panic(fmt.Sprintf("topic: Buffer(%d) is above MaxBuffer (%d values)", n, MaxBuffer))
	case n > 0 && size > 0 && uint64(n) > MaxBufferBytes/size:
		panic(fmt.Sprintf("topic: Buffer(%d) of %s would take %d bytes, above MaxBufferBytes (%d)",
			n, reflect.TypeFor[T](), uint64(n)*size, MaxBufferBytes))
	}
}

// From declares that a subscription to type Pub also accepts publications of
// type Sub, converting each one with f.
//
// f returns the value to deliver and whether to deliver it: returning false
// drops that value for this subscription, so the same option expresses
// filtering, transformation, or both. Both type parameters are inferred from
// f.
//
//	// transform
//	b.Subscribe(topic.From(func(c Celsius) (Fahrenheit, bool) {
//		return Fahrenheit(c*9/5 + 32), true
//	}))
//
//	// filter
//	b.Subscribe(topic.From(func(t Tick) (Tick, bool) {
//		return t, t.N%2 == 0
//	}))
//
// The option may be given more than once to declare several source types. A
// subscription considers its sources in the order given, followed by its own
// type, and the first source that matches a publication decides its outcome;
// no later source sees it. Declaring the same source type twice is allowed and
// the later declaration is unreachable. Sub may be an interface type, which
// matches like a subscription to that type would.
//
// f runs on the goroutine that published the value, before the value is
// offered to the subscription's channel, so it should be cheap and must not
// block. It may publish, subscribe and cancel, this subscription included.
// If it panics, the value is lost for this subscription alone, counted as
// Failed and reported to OnLoss; the publisher and the other subscriptions
// carry on. If it calls runtime.Goexit (as t.FailNow does), the value is
// counted the same way, with an error saying so for Loss.Panic, the
// publication is offered to the subscriptions it had not reached yet, and
// then the publisher's goroutine ends, as it would without the broker.
//
// A nil f makes Subscribe panic.
func From[Pub, Sub any](f func(Sub) (Pub, bool)) Option[Pub] {
	return Option[Pub]{apply: func(c *config[Pub]) {
		if f == nil {
			panic("topic: From function is nil")
		}
		c.srcs = append(c.srcs, newFrom(f, c.sub))
	}}
}

// from is a From source: publications of type Sub, converted by a From
// function, for the subscription to. Never changes after newFrom.
type from[Pub, Sub any] struct {
	to   *sub[Pub]
	dead deadLetters // whether its values are dead letters
	// call is deliver's body, a closure of the From function, which a
	// route whose only source this is calls directly (see route.soloFn): a
	// call of deliver through typedSource goes through the wrapper that
	// gives a generic method its type dictionary, one call more.
	call func(g *guard, v Sub, pub *tally)
}

// newFrom returns the source of a From option with function f, for the
// subscription to.
func newFrom[Pub, Sub any](f func(Sub) (Pub, bool), to *sub[Pub]) *from[Pub, Sub] {
	s := &from[Pub, Sub]{to: to, dead: deadLettersOf(reflect.TypeFor[Sub]())}
	s.call = func(g *guard, v Sub, pub *tally) {
		// One deferred call, open-coded, in this frame: f's results stay
		// in registers, where a frame of its own around f returned them
		// through the named results its deferred closure shared. The
		// deferred closure takes v by its address, which the frame holds
		// anyway, rather than a copy of its own.
		ran, vp := false, &v
		defer func() {
			if !ran {
				if pub != nil {
					pub.add(1)
				}
				s.failed(*vp, recover())
			}
		}()
		out, ok := f(v)
		ran = true
		switch {
		case !ok:
			s.rejected(g, pub)
		case s.dead != deadNever && s.to.opt.redrive != nil && s.isDead(v):
			s.to.offerTo(g, nil, s.to.opt.redrive, out, nil, pub) // a handler's re-drive
		default:
			s.to.offerTo(g, s.to.ch, s.to.q, out, nil, pub)
		}
	}
	return s
}

// deadLetters says whether the values of a source type are dead letters.
type deadLetters uint8

const (
	deadNever  deadLetters = iota
	deadAlways             // a DeadLetter type
	deadMaybe              // an interface a DeadLetter type implements: it depends on the value
)

var deadLetterType = reflect.TypeFor[DeadLetter[struct{}]]() // every DeadLetter[T] has its methods

// deadLettersOf says whether the values of type t are dead letters: a
// DeadLetter type, or a Record of one (a retained DeadLetter type), always;
// an interface a DeadLetter or a Record implements, depending on the value.
func deadLettersOf(t reflect.Type) deadLetters {
	switch {
	case !isInterface(t) && t.Implements(reflect.TypeFor[DeadLettered]()):
		return deadAlways
	case t.Kind() == reflect.Struct && t.Implements(reflect.TypeFor[interface{ record() }]()):
		f, _ := t.FieldByName("Value")
		return deadLettersOf(f.Type)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct &&
		t.Implements(reflect.TypeFor[interface{ record() }]()) && deadLettersOf(t.Elem()) != deadNever:
		return deadMaybe // a pointer to a Record of dead letters, unless nil
	case isInterface(t) && (deadLetterType.Implements(t) || recordType.Implements(t)):
		return deadMaybe
	}
	return deadNever
}

var recordType = reflect.TypeFor[Record[struct{}]]() // every Record[T] has its methods

// isDead reports whether v, given to the source, is a dead letter.
func (s *from[Pub, Sub]) isDead(v Sub) bool {
	switch s.dead {
	case deadAlways:
		return true
	case deadMaybe:
		return isDeadLetter(v) // v is an interface: no allocation
	}
	return false
}

func (s *from[Pub, Sub]) key() unsafe.Pointer { return keyOf[Sub]() }
func (s *from[Pub, Sub]) typ() reflect.Type   { return reflect.TypeFor[Sub]() }
func (s *from[Pub, Sub]) owner() subscriber   { return s.to }
func (s *from[Pub, Sub]) slow() bool          { return true }
func (s *from[Pub, Sub]) newEntry() *entry    { return newEntry[Sub](nil, reflect.TypeFor[Sub](), false) }

func (s *from[Pub, Sub]) deliver(g *guard, v Sub, pub *tally) { s.call(g, v, pub) }

func (s *from[Pub, Sub]) deliverFunc() func(*guard, Sub, *tally) { return s.call }

// rejected counts a value the From function rejected, and the publication
// on pub if it is not nil, in one section of the guard: plain additions on
// words of the section's stripe (see tally).
//
//go:noinline
func (s *from[Pub, Sub]) rejected(g *guard, pub *tally) {
	c := g.enter()
	s.to.opt.rejected.addIn(c)
	if pub != nil {
		pub.addIn(c)
	}
	g.exit(c)
}

// errFromGoexit is the Panic of the Loss of a value whose From function
// called runtime.Goexit.
var errFromGoexit = errors.New("topic: the From function called runtime.Goexit")

// failed counts v, on which f panicked with p (nil: f called
// runtime.Goexit), as Failed, unless the subscription was cancelled
// meanwhile, maybe by f itself: nothing more is then counted or reported
// for it.
func (s *from[Pub, Sub]) failed(v Sub, p any) {
	if s.to.dead.Load() && !s.to.sealed.Load() {
		return
	}
	if p == nil {
		p = errFromGoexit // recover returns nil only then (panic(nil) is a *runtime.PanicNilError)
	}
	s.to.lose(Loss[Pub]{Cause: Failed, Source: v, Panic: p}, nil)
}

func (s *from[Pub, Sub]) redrives() bool { return s.dead != deadNever }

func (s *from[Pub, Sub]) tabFor(t reflect.Type) unsafe.Pointer { return tabOf[Sub](t) }

func (s *from[Pub, Sub]) outlet() (unsafe.Pointer, *lossCounter, *tally) { return nil, nil, nil } // it is slow

func (s *from[Pub, Sub]) deliverBoxed(g *guard, x any, tab unsafe.Pointer) {
	v, ok := asSource[Sub](x, tab)
	if !ok {
		return // unreachable: the route matched x against Sub
	}
	// A nil x reaches a source only when Sub is any; v is then nil.
	s.call(g, v, nil)
}

// Overflow sets what a subscription does with a value its full buffer cannot
// take: DropNewest (the default) drops that value, DropOldest evicts the
// oldest queued value to make room (a consumer receiving at that moment may
// have made room already: the eviction is counted all the same). Either way
// the loss is counted (see Broker.Subscriptions) and reported to OnLoss.
// Neither ever blocks the publisher. Given more than once, the last one
// wins.
//
// A DropOldest subscription with a capacity of one holds the latest value
// published: a consumer that looks now and then sees the current state, not
// a backlog.
//
//	latest, cancel := b.Subscribe(topic.Buffer[Price](1), topic.Overflow[Price](topic.DropOldest))
//
// An unbuffered subscription queues nothing to evict: under DropOldest it
// drops like under DropNewest. Under contention from other publishers, a
// DropOldest publication that has evicted a few values and still finds the
// buffer full drops its own value, counted as Full, rather than spin.
func Overflow[T any](p Policy) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		if p != DropNewest && p != DropOldest {
			panic("topic: unknown overflow policy " + p.String())
		}
		c.policy = p
		c.policySet = true
	}}
}

// Name names a subscription in Broker.Subscriptions. The name is free text
// and need not be unique. Given more than once, the last one wins.
func Name[T any](name string) Option[T] {
	return Option[T]{apply: func(c *config[T]) { c.name = name }}
}

// OnLoss sets a function that receives each value the subscription loses,
// with its cause, after it has been counted. It runs on the goroutine that
// published the value, after the delivery attempt, so like a From function it
// should be cheap and must not block; it may publish, subscribe and cancel. A
// panic in it is recovered and ignored. A loss that happened as the
// subscription was being cancelled may be reported just after cancel
// returns. Given more than once, the last one wins; a nil f sets none.
//
// A subscription with OnLoss is delivered to by a slightly longer path than
// one without: the function must not run while the publication holds the
// state that makes cancellation safe.
func OnLoss[T any](f func(Loss[T])) Option[T] {
	return Option[T]{apply: func(c *config[T]) { c.onLoss = f }}
}

// Context binds a subscription to ctx: when ctx is done, the subscription is
// cancelled as if by its cancellation function, with the same guarantees;
// a handler as if by its stop (which discards with DiscardOnStop), but
// nothing waits for it to end.
// If ctx is already done, Subscribe returns a cancelled subscription, its
// channel closed. The binding is context.AfterFunc's: for the contexts of
// the standard library no goroutine waits for ctx meanwhile (one does for a
// Context implementation without an AfterFunc method), and cancelling the
// subscription first releases ctx's reference to it. Given more than once,
// the last one wins. A nil ctx makes Subscribe panic.
func Context[T any](ctx context.Context) Option[T] {
	return Option[T]{apply: func(c *config[T]) {
		if ctx == nil {
			panic("topic: nil Context")
		}
		c.ctx = ctx
	}}
}
