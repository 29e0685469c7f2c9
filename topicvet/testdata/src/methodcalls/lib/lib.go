// Package lib has generic types of which one method makes an endpoint.
package lib

import "github.com/seedaa7df82c/topic"

// Store holds a T; only Watch subscribes.
type Store[T any] struct{ v T }

func (s *Store[T]) Get() T  { return s.v }
func (s *Store[T]) Set(v T) { s.v = v }

func (s *Store[T]) Watch(b *topic.Broker) func() {
	ch, cancel := b.Subscribe[T]()
	go func() {
		for v := range ch {
			s.v = v
		}
	}()
	return cancel
}

// Topic publishes and receives T, each in a method of its own.
type Topic[T any] struct{ B *topic.Broker }

func (t Topic[T]) Pub(v T) { t.B.Publish(v) }

func (t Topic[T]) Sub() (<-chan T, func()) { return t.B.Subscribe[T]() }
