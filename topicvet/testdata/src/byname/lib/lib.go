// Package lib has helpers that publish and receive types built from their
// type parameter: a type of a package its importers need not import, and
// types with components a template holds by their key (error, struct{},
// a function type, an interface).
package lib

import (
	"context"

	"github.com/seedaa7df82c/topic"

	"byname/box"
)

func Send[T any](b *topic.Broker, v T) { b.Publish(box.Box[T]{V: v}) }

func Recv[T any](b *topic.Broker) (<-chan box.Box[T], func()) { return b.Subscribe[box.Box[T]]() }

type Pair[K, V any] struct {
	K K
	V V
}

func SendErr[T any](b *topic.Broker, v T) { b.Publish(Pair[T, error]{K: v}) }

func RecvErr[T any](b *topic.Broker) (<-chan Pair[T, error], func()) {
	return b.Subscribe[Pair[T, error]]()
}

func SendSet[T comparable](b *topic.Broker, v T) { b.Publish(map[T]struct{}{v: {}}) }

func RecvSet[T comparable](b *topic.Broker) (<-chan map[T]struct{}, func()) {
	return b.Subscribe[map[T]struct{}]()
}

func SendFunc[T any](b *topic.Broker, v T) { b.Publish(Pair[T, func()]{K: v}) }

func SendIface[T any](b *topic.Broker, v T) { b.Publish(Pair[T, interface{ M() }]{K: v}) }

// Forward instantiates Send with its own type parameter: a helper too.
func Forward[T any](b *topic.Broker, v T) { Send(b, []T{v}) }

// Sink is an interface of a method of T.
type Sink[T any] interface{ Put(T) }

// Collect handles every value that can Put a T.
func Collect[T any](b *topic.Broker) func() {
	return b.Handle(func(context.Context, Sink[T]) error { return nil })
}
