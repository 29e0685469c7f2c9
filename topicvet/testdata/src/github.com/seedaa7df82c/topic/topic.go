// Package topic is a stub of the core, with the signatures the tests of
// topicvet use; TestStubMatchesTheCore keeps them true to the core.
package topic

import (
	"context"
	"time"
)

type Broker struct{}

func (b *Broker) Publish[T any](v T)                                    {}
func (b *Broker) Append[T any](v T) (offset uint64, ok bool)            { return 0, false }
func (b *Broker) Subscribe[T any](opts ...Option[T]) (<-chan T, func()) { return nil, nil }
func (b *Broker) Handle[T any](f func(context.Context, T) error, opts ...Option[T]) func() {
	return nil
}
func (b *Broker) Follow[T any](opts ...Option[T]) *Follower[T]                   { return nil }
func (b *Broker) Read[T any](from uint64, max int) ([]Record[T], uint64, uint64) { return nil, 0, 0 }
func (b *Broker) Retain[T any](r Retention)                                      {}
func (b *Broker) RetainLatest[T any, K comparable](key func(T) K, r Retention)   {}
func (b *Broker) Watch(every time.Duration, f func(Incident)) (stop func())      { return nil }
func (b *Broker) TimeCalls(f func(Call)) (stop func())                           { return nil }
func (b *Broker) Shutdown(ctx context.Context) error                             { return nil }

type Follower[T any] struct{}

func (x *Follower[T]) Close()                                      {}
func (x *Follower[T]) Next(ctx context.Context) (Record[T], error) { return Record[T]{}, nil }
func (x *Follower[T]) Commit(o uint64)                             {}

type Option[T any] struct{}

func AckWait[T any](d time.Duration) Option[T]               { return Option[T]{} }
func AttemptTimeout[T any](d time.Duration) Option[T]        { return Option[T]{} }
func Buffer[T any](n int) Option[T]                          { return Option[T]{} }
func Context[T any](ctx context.Context) Option[T]           { return Option[T]{} }
func DiscardOnStop[T any]() Option[T]                        { return Option[T]{} }
func Follow[T any]() Option[T]                               { return Option[T]{} }
func From[Pub, Sub any](f func(Sub) (Pub, bool)) Option[Pub] { return Option[Pub]{} }
func Name[T any](name string) Option[T]                      { return Option[T]{} }
func Overflow[T any](p Policy) Option[T]                     { return Option[T]{} }
func Retry[T any](p RetryPolicy) Option[T]                   { return Option[T]{} }

const (
	MaxBuffer      = 1 << 24
	MaxBufferBytes = 1 << 30
)

type Policy uint8

const (
	DropNewest Policy = iota
	DropOldest
)

type RetryPolicy struct {
	Attempts  int
	Base, Max time.Duration
	Jitter    float64
}

type Retention struct {
	Count  int
	Age    time.Duration
	NoTime bool
}

type Record[T any] struct {
	Offset uint64
	Value  T
}

type DeadLetter[T any] struct {
	Value T
	Err   error
}

type DeadLettered interface{ Letter() Letter }

type Letter struct{}

func (d DeadLetter[T]) Letter() Letter { return Letter{} }

type Incident struct{}

type Call struct{}
