package deferredclosure

import (
	"context"

	"github.com/seedaa7df82c/topic"
)

type Tick struct{}

// A deferred closure, declared before the subscription, stops it on every
// path.
func deferredFirst(ctx context.Context, b *topic.Broker) error {
	var stop func()
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	stop = b.Handle(func(context.Context, Tick) error { return nil })
	<-ctx.Done()
	return ctx.Err()
}

// A deferred closure that does not use the variable does not stop it.
func deferredOther(ctx context.Context, b *topic.Broker, early bool) error {
	var other func()
	defer func() { println("done") }()
	stop := b.Handle(func(context.Context, Tick) error { return nil }) // want `the stop function of Handle \(stop\) is not used on every path`
	if early {
		return nil
	}
	other = stop
	other()
	return ctx.Err()
}
