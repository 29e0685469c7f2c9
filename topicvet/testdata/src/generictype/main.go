// A generic worker type handles its type parameter; the program makes one
// of Job, and one of Report through a generic function. Lost, which
// nothing receives, is reported: the workers receive Job and Report only.
package main

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Worker[T any] struct{ b *topic.Broker }

func (w Worker[T]) Run(f func(T)) func() {
	return w.b.Handle(func(_ context.Context, v T) error { f(v); return nil })
}

type Job struct{}

type Lost struct{}

func main() {
	var b topic.Broker
	stop := Worker[Job]{&b}.Run(func(Job) {})
	defer stop()
	b.Publish(Job{})
	reports(&b)
	b.Publish(Lost{}) // want `main.Lost is published, but nothing in the program receives it`
}

// A worker made by a generic function receives its type argument too.
func newWorker[T any](b *topic.Broker) Worker[T] { return Worker[T]{b} }

type Report struct{}

func reports(b *topic.Broker) {
	stop := newWorker[Report](b).Run(func(Report) {})
	defer stop()
	b.Publish(Report{})
}
