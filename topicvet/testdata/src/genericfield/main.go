// A generic type instantiated with a type parameter outside a function (a
// field w Worker[T] of a generic struct) is followed at the calls of its
// methods (p.w.Run in Pool[T].Start): the handler is one of Job, and Lost,
// which nothing receives, is reported.
package main

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Worker[T any] struct{ b *topic.Broker }

func (w Worker[T]) Run(f func(T)) func() {
	return w.b.Handle(func(_ context.Context, v T) error { f(v); return nil })
}

type Pool[T any] struct{ w Worker[T] }

func (p Pool[T]) Start(f func(T)) func() { return p.w.Run(f) }

type Job struct{}

type Lost struct{}

func main() {
	var b topic.Broker
	stop := Pool[Job]{Worker[Job]{&b}}.Start(func(Job) {})
	defer stop()
	b.Publish(Job{})
	b.Publish(Lost{}) // want `main.Lost is published, but nothing in the program receives it`
}
