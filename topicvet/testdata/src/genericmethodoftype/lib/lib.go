// Package lib has a generic type with generic methods.
package lib

import "github.com/seedaa7df82c/topic"

type Worker[T any] struct{ B *topic.Broker }

// Emit publishes a Tagged of T and U.
func (w Worker[T]) Emit[U any](v U) { w.B.Publish(Tagged[T, U]{V: v}) }

// Take receives a Tagged of T and U.
func (w Worker[T]) Take[U any]() (<-chan Tagged[T, U], func()) {
	return w.B.Subscribe[Tagged[T, U]]()
}

type Tagged[T, U any] struct{ V U }
