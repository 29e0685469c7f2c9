// Package lib holds generic helpers that publish and subscribe their type
// parameter, followed to their instantiations in other packages.
package lib

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

// Send publishes v.
func Send[T any](b *topic.Broker, v T) { b.Publish(v) }

// Listen handles T, through a second helper.
func Listen[T any](b *topic.Broker, f func(T)) func() { return handle(b, f) }

func handle[U any](b *topic.Broker, f func(U)) func() {
	return b.Handle(func(_ context.Context, v U) error { f(v); return nil })
}

// Box is a generic type whose methods publish: each instance of it, here
// Box[T] in NewBox, instantiates them.
type Box[T any] struct{ b *topic.Broker }

// NewBox returns a Box of b.
func NewBox[T any](b *topic.Broker) *Box[T] { return &Box[T]{b} }

// Boxed is what a Box publishes.
type Boxed[T any] struct{ V T }

// Put publishes Boxed[T].
func (x *Box[T]) Put(v T) { x.b.Publish(Boxed[T]{V: v}) }

// Parcel is published by value.
type Parcel struct{ ID int }

// SendParcel publishes a Parcel.
func SendParcel(b *topic.Broker) { b.Publish(Parcel{}) }
