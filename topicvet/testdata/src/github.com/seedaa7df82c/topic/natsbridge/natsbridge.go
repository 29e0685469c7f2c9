// Package natsbridge is a stub of the bridge to NATS, shaped like it: its
// generic methods subscribe and publish through unexported helpers and a
// generic type's methods.
package natsbridge

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Bridge struct{ b *topic.Broker }

type Link struct{ stop func() }

// Imported is what an import publishes.
type Imported[T any] struct {
	Subject string
	Value   T
}

func (br *Bridge) Export[T any](subject string) (*Link, error) {
	l := &Link{}
	l.stop = br.handle(func(context.Context, T) error { return nil })
	return l, nil
}

func (br *Bridge) handle[T any](f func(context.Context, T) error) func() {
	return br.b.Handle(f)
}

type importer[T any] struct{ br *Bridge }

func (br *Bridge) Import[T any](subject string) (*Link, error) {
	x := &importer[T]{br: br}
	x.receive(nil)
	return &Link{}, nil
}

func (x *importer[T]) receive(data []byte) {
	var v T
	x.br.b.Publish(Imported[T]{Value: v})
}
