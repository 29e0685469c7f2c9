// Package lib holds generic helpers that publish or receive a type built
// from their type parameter (*T, []T, Box[T]), instantiated in another
// package.
package lib

import "github.com/seedaa7df82c/topic"

type Box[T any] struct{ V T }

func SendPtr[T any](b *topic.Broker, v T) { b.Publish(&v) }

func SendBox[T any](b *topic.Broker, v T) { b.Publish(Box[T]{v}) }

func ListenSlice[T any](b *topic.Broker) (<-chan []T, func()) { return b.Subscribe[[]T]() }
