package topic

import (
	"reflect"
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
}

// Buffer sets the capacity of a subscription's channel.
//
// A capacity of zero makes the subscription unbuffered, so a value reaches it
// only if a receiver is already waiting; anything else is dropped. A negative
// capacity is treated as zero. Without this option the capacity is one, the
// smallest buffer that lets a publication survive a consumer that is not
// currently blocked in a receive. Given more than once, the last one wins.
//
// The type argument cannot be inferred from n, so it is written explicitly:
//
//	ch, cancel := b.Subscribe(topic.Buffer[Tick](64))
func Buffer[T any](n int) Option[T] {
	return Option[T]{apply: func(c *config[T]) { c.capacity = max(n, 0) }}
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
//
// A nil f makes Subscribe panic.
func From[Pub, Sub any](f func(Sub) (Pub, bool)) Option[Pub] {
	return Option[Pub]{apply: func(c *config[Pub]) {
		if f == nil {
			panic("topic: From function is nil")
		}
		c.sub.srcs = append(c.sub.srcs, &from[Pub, Sub]{f: f, to: c.sub})
	}}
}

// from is a From source: publications of type Sub, converted by f, for the
// subscription to. Never changes.
type from[Pub, Sub any] struct {
	f  func(Sub) (Pub, bool)
	to *sub[Pub]
}

func (s *from[Pub, Sub]) key() unsafe.Pointer { return keyOf[Sub]() }
func (s *from[Pub, Sub]) typ() reflect.Type   { return reflect.TypeFor[Sub]() }
func (s *from[Pub, Sub]) owner() subscriber   { return s.to }
func (s *from[Pub, Sub]) runsUserCode() bool  { return true }
func (s *from[Pub, Sub]) newEntry() *entry    { return newEntry[Sub](nil, reflect.TypeFor[Sub](), false) }

func (s *from[Pub, Sub]) deliver(g *guard, v Sub) {
	if out, ok := s.f(v); ok {
		s.to.sendGuarded(g, out)
	}
}

func (s *from[Pub, Sub]) deliverBoxed(g *guard, x any) {
	v, ok := x.(Sub)
	if !ok && x != nil {
		return // unreachable: the route matched x against Sub
	}
	// A nil x reaches a source only when Sub is any; v is then nil.
	s.deliver(g, v)
}
