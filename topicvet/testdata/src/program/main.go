package main

import (
	"context"
	"fmt"
	"reflect"

	"github.com/seedaa7df82c/topic"

	"library"
	"program/lib"
)

type Order struct{ ID int }

type Typo struct{ ID int }

type Cents int64

type Pinged struct{}

func (Pinged) Kind() string { return "ping" }

type Event interface{ Kind() string }

type Helped struct{}

type Missed struct{}

type Retained struct{}

type Reflected struct{}

type Anything struct{}

func main() {
	var b topic.Broker

	orders, cancel := b.Subscribe[Order]()
	defer cancel()
	b.Publish(Order{ID: 1})
	<-orders

	b.Publish(Typo{ID: 1}) // want `main.Typo is published, but nothing in the program receives it`
	b.Publish(Typo{ID: 2}) // once per type

	// From makes Cents for its subscriber out of Order, and receives Order.
	cents, cancelCents := b.Subscribe(topic.From(func(o Order) (Cents, bool) { return Cents(o.ID), true }))
	defer cancelCents()
	<-cents

	// An interface subscription receives Pinged.
	events, cancelEvents := b.Subscribe[Event]()
	defer cancelEvents()
	b.Publish(Pinged{})
	<-events

	// Generic helpers, in another package, followed to here.
	lib.Send(&b, Helped{})
	stop := lib.Listen(&b, func(Helped) {})
	defer stop()
	lib.Send(&b, Missed{}) // want `main.Missed is published, but nothing in the program receives it`

	// A helper of this package that instantiates another with a type
	// built from its type parameter: followed, the type arguments put in.
	row[Row](&b) // want `main.Wrapped\[\*main.Row\] is published, but nothing in the program receives it`

	// Append publishes too.
	b.Append(Appended{}) // want `main.Appended is published, but nothing in the program receives it`

	// A method value never called still publishes.
	publish := b.Publish[Retained]
	b.Retain[Retained](topic.Retention{Count: 1})
	publish(Retained{})

	// A retained log, read: Record[T] receives T.
	recs, cancelRecs := b.Subscribe[topic.Record[Retained]]()
	defer cancelRecs()
	<-recs

	// A handler with Retry: the broker publishes its dead letters, which
	// are not reported whether received or not.
	stopRetried := b.Handle(func(context.Context, Order) error { return nil }, topic.Retry[Order](topic.RetryPolicy{Attempts: 2}))
	defer stopRetried()
	stopUnheard := b.Handle(func(context.Context, Helped) error { return nil }, topic.Retry[Helped](topic.RetryPolicy{Attempts: 2}))
	defer stopUnheard()

	// The broker publishes dead letters: not reported.
	dead, cancelDead := b.Subscribe[topic.DeadLetter[Order]]()
	defer cancelDead()
	<-dead

	// A generic type's methods are followed to its instances: a Box[int]
	// publishes Boxed[int].
	boxed, cancelBoxed := b.Subscribe[lib.Boxed[int]]()
	defer cancelBoxed()
	lib.NewBox[int](&b).Put(1)
	<-boxed

	// Limits. Publishing through an any variable publishes on any: the
	// dynamic type is not known, and nothing is reported.
	var v any = Anything{}
	b.Publish(v)
	// Reflection builds the value; it is still published as an any.
	r := reflect.New(reflect.TypeFor[Reflected]()).Elem().Interface()
	b.Publish(r)
	// A library's types, published and subscribed in the library.
	library.Ship(&b, 1)
	returned, cancelReturned := library.Wait(&b)
	defer cancelReturned()
	<-returned
	fmt.Println("done")

	b.Publish(Typo{}) //topicvet:ignore unreceived -- silenced, and once per type anyway
}

type Row struct{}

type Wrapped[T any] struct{ V T }

func sendWrapped[T any](b *topic.Broker, v T) { b.Publish(Wrapped[T]{V: v}) }

func row[H any](b *topic.Broker) { sendWrapped[*H](b, nil) }

type Appended struct{}
