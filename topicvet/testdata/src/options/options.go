package options

import (
	"context"
	"time"

	"github.com/seedaa7df82c/topic"
)

type Order struct{ ID int }

type Event interface{ Kind() string }

type Big struct{ Data [1 << 10]byte }

func misused(b *topic.Broker, opts []topic.Option[Order]) {
	b.Subscribe(topic.Retry[Order](topic.RetryPolicy{Attempts: 3}))             // want `Retry is an option of Broker.Handle: Subscribe panics`
	b.Subscribe(topic.DiscardOnStop[Order]())                                   // want `DiscardOnStop is an option of Broker.Handle: Subscribe panics`
	b.Follow(topic.AttemptTimeout[Order](time.Second))                          // want `AttemptTimeout is an option of Broker.Handle: Broker.Follow panics`
	b.Follow(topic.Buffer[Order](8))                                            // want `Buffer is not an option of Broker.Follow`
	b.Follow(topic.From(func(e Event) (Order, bool) { return Order{}, false })) // want `From is not an option of a follower: Broker.Follow panics`
	b.Subscribe(topic.Follow[Order](), topic.Overflow[Order](topic.DropOldest)) // want `Overflow is not an option of a follower: Subscribe panics`
	b.Subscribe(topic.AckWait[Order](time.Second))                              // want `AckWait is an option of a follower`
	b.Subscribe(topic.Follow[Order](), topic.AckWait[Order](time.Second))       // want `AckWait needs a Name`
	b.Subscribe(append(opts, topic.AckWait[Order](time.Second))...)             // a spread list may hold Follow and Name
	b.Subscribe(topic.Follow[Order](), topic.AckWait[Order](time.Second), topic.Name[Order]("billing"))
	b.Handle(func(context.Context, Order) error { return nil }, topic.Retry[Order](topic.RetryPolicy{Attempts: 3}))
	b.Handle(nil, topic.Buffer[Order](1)) // want `Handle panics on a nil function`
}

func retries() {
	_ = topic.Retry[Order](topic.RetryPolicy{})                                // want `RetryPolicy.Attempts must be at least 1 \(the literal leaves it zero\)`
	_ = topic.Retry[Order](topic.RetryPolicy{Attempts: 0, Base: time.Second})  // want `RetryPolicy.Attempts must be at least 1`
	_ = topic.Retry[Order](topic.RetryPolicy{Attempts: 2, Base: -time.Second}) // want `delays must not be negative`
	_ = topic.Retry[Order](topic.RetryPolicy{Attempts: 2, Jitter: 1.5})        // want `Jitter must be in \[0, 1\]`
	_ = topic.Retry[Order](topic.RetryPolicy{Attempts: 2, Jitter: 0.2})
	n := 0
	_ = topic.Retry[Order](topic.RetryPolicy{Attempts: n}) // not a constant: not known
}

func buffers() {
	_ = topic.Buffer[Order](1 << 25) // want `Buffer\(33554432\) is above MaxBuffer`
	_ = topic.Buffer[Big](1 << 21)   // want `takes more than MaxBufferBytes`
	_ = topic.Buffer[Order](1 << 20)
	_ = topic.Overflow[Order](topic.Policy(7)) // want `unknown policy`
	_ = topic.From[Order, Event](nil)          // want `From with a nil function`
	_ = topic.Context[Order](nil)              // want `Context with a nil context`
}

func retained(b *topic.Broker) {
	b.Retain[Order](topic.Retention{})                                          // want `Retention.Count must be positive \(the literal leaves it zero\)`
	b.Retain[Order](topic.Retention{Count: 0})                                  // want `Retention.Count must be positive`
	b.Retain[Order](topic.Retention{Count: 10, Age: -time.Minute})              // want `Retention.Age must not be negative`
	b.Retain[Order](topic.Retention{Count: 10, Age: time.Minute, NoTime: true}) // want `Retention.Age needs times`
	b.Retain[Event](topic.Retention{Count: 10})                                 // want `Retain of an interface type panics`
	b.Retain[topic.Record[Order]](topic.Retention{Count: 10})                   // want `Retain of a Record type panics`
	b.RetainLatest[Order, int](nil, topic.Retention{Count: 10})                 // want `RetainLatest panics on a nil key function`
	b.Retain[Order](topic.Retention{Count: 10, Age: time.Minute})
	b.Follow[topic.Record[Order]]() // want `Broker.Follow of a Record type panics`
}

func watches(b *topic.Broker) {
	b.Watch(0, func(topic.Incident) {}) // want `Watch panics: its interval must be positive`
	b.Watch(time.Second, nil)           // want `Watch panics on a nil function`
	b.TimeCalls(nil)                    // want `TimeCalls panics on a nil function`
}

// A type declared in a generic function holds its type parameter: its
// size is not known, and nothing is reported.
func generic[T any]() {
	type local struct {
		v T
		n int
	}
	_ = topic.Buffer[local](1 << 20)
	_ = topic.Buffer[[4]T](1 << 20)
}
